package hub_test

import (
	"net/http"
	"testing"
	"time"
)

// TestRememberedReadsFollowRevocation: a reader's proxied read is
// remembered (the next one skips the router and the lookups), and a
// revocation made through the hub drops it, so the very next read is
// refused.
func TestRememberedReadsFollowRevocation(t *testing.T) {
	f := newProxyFixture(t)
	rita, admin := f.token(f.rita, time.Minute, ""), f.token(f.alice, time.Minute, "")
	status := "/v1/models/" + f.model + "/status"
	for i := range 2 {
		if code, b := f.do(http.MethodGet, status, rita, nil); code != http.StatusOK {
			t.Fatalf("read %d: %d %s", i, code, b)
		}
		if !f.hub.RemembersRead(rita, f.model) {
			t.Fatalf("read %d was not remembered", i)
		}
	}
	if code, b := f.do(http.MethodGet, "/v1/models/"+f.model+"/applications", rita, nil); code != http.StatusOK {
		t.Fatalf("another read of the model from the remembered route: %d %s", code, b)
	}
	if f.hub.RemembersRead(rita, "00000000-0000-0000-0000-000000000000") {
		t.Fatal("a route is remembered for a model never read")
	}

	grant := map[string]string{"user": "rita@example.com", "level": "read", "model": f.model}
	if code, b := f.do(http.MethodDelete, "/v1/grants", admin, grant); code != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", code, b)
	}
	if f.hub.RemembersRead(rita, f.model) {
		t.Fatal("the revocation left the remembered read in place")
	}
	if code, b := f.do(http.MethodGet, status, rita, nil); code != http.StatusNotFound {
		t.Fatalf("the first read after the revocation: %d %s, want 404", code, b)
	}
	if f.hub.RemembersRead(rita, f.model) {
		t.Fatal("a refused read was remembered")
	}
}
