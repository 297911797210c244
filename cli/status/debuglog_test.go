package status

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

// TestDebugLogLimitAndDate: --limit N prints the N most recent lines and
// exits without following; --date prints dates.
func TestDebugLogLimitAndDate(t *testing.T) {
	const uuid = "6a1f0c2e-0000-4000-8000-0000000000d1"
	at := time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)
	mux := http.NewServeMux()
	follows := 0
	mux.HandleFunc("GET /v1/models/"+uuid+"/logs", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("follow") == "true" {
			follows++
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		for i := 1; i <= 5; i++ {
			_ = json.NewEncoder(w).Encode(api.LogRecord{Seq: uint64(i), Time: at, Entity: "unit-kv-0", Level: "INFO", Module: "unit.kv/0.juju-log", Message: "line " + string(rune('0'+i))})
		}
	})
	a, out, errb, mc := atFakeModel(t, mux, uuid)
	cmd := a.debugLogCmd(func(ctx context.Context, _ string, o debugLogOptions) error { return a.streamLogs(ctx, mc, o) })
	cmd.SetArgs([]string{"--limit", "2", "--date", "--utc"})
	if err := cmd.ExecuteContext(t.Context()); err != nil {
		t.Fatalf("debug-log: %v %s", err, errb)
	}
	want := "unit-kv-0: 2026-03-14 09:26:53 INFO unit.kv/0.juju-log line 4\nunit-kv-0: 2026-03-14 09:26:53 INFO unit.kv/0.juju-log line 5\n"
	if out.String() != want || follows != 0 {
		t.Errorf("debug-log --limit 2 --date printed (following %d times)\n%s\nwant\n%s", follows, out, want)
	}
}
