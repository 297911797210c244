package loopback

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestOnlyServesTheMachineItself: a request from a loopback peer is
// served; one from another address, or relayed by a proxy on the machine
// (a forwarding header), is answered 404.
func TestOnlyServesTheMachineItself(t *testing.T) {
	h := Only(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }))
	for _, c := range []struct {
		peer, header string
		want         int
	}{
		{"127.0.0.1:5000", "", http.StatusOK},
		{"[::1]:5000", "", http.StatusOK},
		{"192.0.2.7:5000", "", http.StatusNotFound},
		{"[2001:db8::7]:5000", "", http.StatusNotFound},
		{"127.0.0.1:5000", "X-Forwarded-For", http.StatusNotFound},
		{"127.0.0.1:5000", "Forwarded", http.StatusNotFound},
		{"garbage", "", http.StatusNotFound},
	} {
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		r.RemoteAddr = c.peer
		if c.header != "" {
			r.Header.Set(c.header, "198.51.100.1")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("peer %s, header %q: %d, want %d", c.peer, c.header, w.Code, c.want)
		}
	}
}
