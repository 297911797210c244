package hub_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/hub/internal/hubtest"
	"github.com/droverhq/drover/tests/testkit"
)

// cutDatabase makes the hub's database refuse connections, and ends the
// ones it holds, as a stopped or restarting server does; the returned
// function lets it be reached again.
func cutDatabase(t *testing.T, dsn string) (restore func()) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	set := func(allow bool) {
		t.Helper()
		pg := hubtest.Postgres()
		if err := pg.Exec(t.Context(), "postgres", fmt.Sprintf("ALTER DATABASE %s ALLOW_CONNECTIONS %t", pgx.Identifier{name}.Sanitize(), allow)); err != nil {
			t.Fatal(err)
		}
		if !allow {
			if err := pg.Exec(t.Context(), "postgres", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", name); err != nil {
				t.Fatal(err)
			}
		}
	}
	set(false)
	return func() { set(true) }
}

// TestDatabaseOutage: while the hub cannot reach its database, it answers
// 503 "unavailable" (which clients retry), not a 500 or a 401, and it
// makes no change it cannot record in the audit log, even when everything
// else the change needs is still cached. Once the database is back, the
// hub serves again with no restart.
func TestDatabaseOutage(t *testing.T) {
	f := newProxyFixture(t)
	will, alice := f.token(f.will, time.Minute, ""), f.token(f.alice, time.Minute, "")
	config := "/v1/models/" + f.model + "/config"
	set := func(n int) (int, []byte) {
		return f.do(http.MethodPatch, config, will, map[string]any{"set": map[string]any{"logging-config": fmt.Sprintf("<root>=DEBUG;n%d=INFO", n)}})
	}
	if code, b := set(1); code != http.StatusOK {
		t.Fatalf("a write before the outage: %d %s", code, b)
	}

	restore := cutDatabase(t, f.cfg.DSN)
	unavailable := func(what string, code int, b []byte) {
		t.Helper()
		var e struct{ Code, Message string }
		if err := json.Unmarshal(b, &e); err != nil || code != http.StatusServiceUnavailable || e.Code != "unavailable" ||
			e.Message != "the hub cannot reach its database (try again shortly; if this lasts, the hub's operator checks its PostgreSQL server)" {
			t.Errorf("%s while the database is out of reach: %d %s", what, code, b)
		}
	}
	// The caller, the decision and the route are cached from the write
	// above: only the audit log needs the database.
	code, b := set(2)
	unavailable("a write", code, b)
	code, b = f.do(http.MethodGet, "/v1/models", alice, nil)
	unavailable("the models listing", code, b)
	code, b = f.do(http.MethodGet, "/v1/models", f.token(f.rita, time.Minute, ""), nil)
	unavailable("a caller the hub has not seen lately", code, b)

	got, err := f.spoke.Admin.ModelConfig(t.Context(), f.model)
	if err != nil {
		t.Fatal(err)
	}
	if lc := fmt.Sprint(got["logging-config"]); strings.Contains(lc, "n2") {
		t.Errorf("the controller applied a write the hub could not record: logging-config %q", lc)
	}

	restore()
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		code, _ := set(3)
		return code == http.StatusOK, nil
	}, "writes through the hub once its database is back")

	var out struct {
		Entries []struct {
			Result  string
			Details struct {
				Body map[string]any
			}
		}
	}
	f.get("/v1/audit?operation=model-config", f.hubAdmin(), &out)
	var results []string
	for _, e := range out.Entries {
		results = append(results, e.Result)
	}
	if len(results) == 0 || results[0] != "ok" || strings.Contains(strings.Join(results, " "), "pending") {
		t.Errorf("model-config audit entries after the outage: %v; want them all ok, none pending", results)
	}
}
