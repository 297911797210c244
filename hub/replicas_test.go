package hub_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/droverhq/drover/tests/testkit"
)

// TestReplicasAgreeOnPermissions: two hub replicas on one database are
// interchangeable: a session from one is good on the other, and a grant or
// a revoke made through one holds on the other at once, although the other
// had just cached the opposite decision (it keeps decisions for 2 s; the
// delivering replica announces the change through PostgreSQL).
func TestReplicasAgreeOnPermissions(t *testing.T) {
	f := newFixture(t)
	a, b := f.env, f.env.replica()
	admin, dave := a.token(f.alice, time.Minute, ""), a.token(f.dave, time.Minute, "")
	model := "/v1/models/" + f.model.UUID
	grant := map[string]string{"user": "dave@example.com", "level": "read", "model": f.model.UUID}
	seesModel := func(want int) {
		t.Helper()
		// Well inside the 2 s a cached decision lives.
		testkit.EventuallyWithin(t, time.Second, func() (bool, error) {
			code, _ := b.do(http.MethodGet, model, dave, nil)
			return code == want, nil
		}, "the other replica's answer")
	}
	if code, body := b.do(http.MethodGet, "/v1/whoami", dave, nil); code != http.StatusOK {
		t.Fatalf("a session from one replica on the other: %d %s", code, body)
	}
	for i := range 3 {
		if code, _ := b.do(http.MethodGet, model, dave, nil); code != http.StatusNotFound { // cached: denied
			t.Fatalf("round %d: before the grant: %d", i, code)
		}
		if code, body := a.do(http.MethodPost, "/v1/grants", admin, grant); code != http.StatusNoContent {
			t.Fatalf("round %d: grant: %d %s", i, code, body)
		}
		seesModel(http.StatusOK)
		if code, body := a.do(http.MethodDelete, "/v1/grants", admin, grant); code != http.StatusNoContent {
			t.Fatalf("round %d: revoke: %d %s", i, code, body)
		}
		seesModel(http.StatusNotFound)
	}
}
