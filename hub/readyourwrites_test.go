package hub_test

import (
	"net/http"
	"testing"
	"time"
)

// TestGrantIsVisibleToTheNextRequest: a grant or revoke answered by the hub
// is already in OpenFGA, so the grantee's very next request sees it (the
// outbox delivers asynchronously; the handler waits for it).
func TestGrantIsVisibleToTheNextRequest(t *testing.T) {
	f := newFixture(t)
	admin, dave := f.token(f.alice, time.Minute, ""), f.token(f.dave, time.Minute, "")
	body := map[string]string{"user": "dave@example.com", "level": "read", "model": f.model.UUID}
	for i := range 10 {
		if code, b := f.do(http.MethodPost, "/v1/grants", admin, body); code != http.StatusNoContent {
			t.Fatalf("round %d: grant: %d %s", i, code, b)
		}
		if code, b := f.do(http.MethodGet, "/v1/models/"+f.model.UUID, dave, nil); code != http.StatusOK {
			t.Fatalf("round %d: the grantee's next request after the grant: %d %s", i, code, b)
		}
		if code, b := f.do(http.MethodDelete, "/v1/grants", admin, body); code != http.StatusNoContent {
			t.Fatalf("round %d: revoke: %d %s", i, code, b)
		}
		if code, b := f.do(http.MethodGet, "/v1/models/"+f.model.UUID, dave, nil); code != http.StatusNotFound {
			t.Fatalf("round %d: the grantee's next request after the revoke: %d %s", i, code, b)
		}
	}
}
