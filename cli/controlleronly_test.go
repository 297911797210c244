package cli

import (
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestControllerCommandsAtAHub: the commands that only a controller serves
// refuse a hub with what to run instead, and send it nothing (enable-ha
// used to post to the hub and print its bare 404).
func TestControllerCommandsAtAHub(t *testing.T) {
	var mu sync.Mutex
	var sent []string
	a, out, errb := atFakeHub(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sent = append(sent, r.Method+" "+r.URL.Path)
		mu.Unlock()
		http.NotFound(w, r)
	}))
	for _, c := range [][]string{{"enable-ha"}, {"enable-ha", "-n", "5", "-c", "hub"}, {"create-hub-token"}, {"remove-hub-trust", "-y"}} {
		out.Reset()
		errb.Reset()
		want := `ERROR "hub" is a hub: run '` + c[0] + `' against the controller itself (-c CONTROLLER)` + "\n"
		if code := a.Run(t.Context(), c); code != 1 || out.Len() != 0 || errb.String() != want {
			t.Errorf("%q: exit %d\n%s%s\nwant exit 1\n%s", c, code, out, errb, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 0 {
		t.Errorf("sent to the hub: %s", strings.Join(sent, ", "))
	}
}
