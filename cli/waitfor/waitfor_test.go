package waitfor

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
	"github.com/droverhq/drover/cli/internal/modelcmd/modelcmdtest"
)

func appStatus(workload ...string) *api.FullStatus {
	units := map[string]api.UnitStatus{}
	for i, w := range workload {
		units["kvstore/"+string(rune('0'+i))] = api.UnitStatus{
			WorkloadStatus: api.StatusDetail{Current: w}, JujuStatus: api.StatusDetail{Current: "idle"}, Machine: "0",
		}
	}
	app := "maintenance"
	if len(workload) > 0 && workload[len(workload)-1] == "active" {
		app = "active"
	}
	return &api.FullStatus{
		Model:        api.ModelStatus{Name: "m", Status: api.StatusDetail{Current: "available"}},
		Machines:     map[string]api.MachineStatus{"0": {JujuStatus: api.StatusDetail{Current: "started"}}},
		Applications: map[string]api.ApplicationStatus{"kvstore": {ApplicationStat: api.StatusDetail{Current: app}, Units: units}},
	}
}

// fakeModel serves a watch whose reset frame carries first, then a delta,
// and answers status reads (the delta's) with then.
func fakeModel(t *testing.T, first, then *api.FullStatus) (*Commands, *modelcmd.ModelConn, func() string) {
	const uuid = "5d2c6a58-0b5a-4a3b-9a57-0a7c1d1d2f00"
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models/"+uuid+"/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(then)
	})
	mux.HandleFunc("GET /v1/models/"+uuid+"/watch", func(w http.ResponseWriter, r *http.Request) {
		conn, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		_ = conn.WriteJSON(api.WatchFrame{Type: api.FrameReset, Index: 4, Status: first})
		_ = conn.WriteJSON(api.WatchFrame{Type: api.FrameDelta, Index: 5, Deltas: []api.WatchDelta{{Kind: "unit", Key: "kvstore/1", Op: "put"}}})
		_, _, _ = conn.ReadMessage()
	})
	e, out, _, mc := modelcmdtest.AtFakeModel(t, mux, uuid)
	return &Commands{Env: e}, mc, out.String
}

func kindNamed(t *testing.T, name string) kind {
	for _, k := range kinds {
		if k.name == name {
			return k
		}
	}
	t.Fatalf("no kind %q", name)
	return kind{}
}

// TestWaitForReachesTheGoal: the goal is checked on every change; the
// first status does not satisfy it, the one after the delta does.
func TestWaitForReachesTheGoal(t *testing.T) {
	for _, c := range []struct{ kind, name, query string }{
		{"application", "kvstore", `len(units) == 2 && forEach(units, unit => unit.workload-status == "active")`},
		{"application", "kvstore", ""},
		{"unit", "kvstore/1", `workload-status=="active" && agent-status=="idle" && len(machines) == 1`},
		{"model", "m", `forEach(applications, app => app.status == "active") && len(units) == 2`},
		{"machine", "0", ""},
	} {
		k := kindNamed(t, c.kind)
		q := c.query
		if q == "" {
			q = k.query
		}
		x, err := parseQuery(q, k)
		if err != nil {
			t.Fatal(err)
		}
		a, mc, out := fakeModel(t, appStatus("maintenance"), appStatus("active", "active"))
		if c.kind == "machine" { // absent at first: waited for
			first := appStatus("maintenance")
			first.Machines = nil
			a, mc, out = fakeModel(t, first, appStatus("active", "active"))
		}
		if err := a.wait(t.Context(), mc, k, c.name, x, 10*time.Second, true); err != nil {
			t.Errorf("wait-for %s %s --query %s: %v", c.kind, c.name, q, err)
			continue
		}
		if want := c.kind + ` "` + c.name + `" reached `; !strings.HasPrefix(out(), want) {
			t.Errorf("wait-for %s %s said %q, want %q...", c.kind, c.name, out(), want)
		}
	}
}

// TestWaitForTimesOut: a goal never reached ends after --timeout with
// what the entity last looked like.
func TestWaitForTimesOut(t *testing.T) {
	k := kindNamed(t, "application")
	x, err := parseQuery(`len(units) == 3`, k)
	if err != nil {
		t.Fatal(err)
	}
	a, mc, _ := fakeModel(t, appStatus("maintenance"), appStatus("active", "active"))
	err = a.wait(t.Context(), mc, k, "kvstore", x, 500*time.Millisecond, true)
	want := `timed out after 500ms waiting for application "kvstore" to reach len(units) == 3; last: life alive, status active, 2 unit(s)`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

// TestWaitForRefusesBadQueries: a query that does not parse, or names
// what the kind does not offer, is a usage error before any waiting.
func TestWaitForRefusesBadQueries(t *testing.T) {
	for kindName, q := range map[string]string{
		"application": `workload-status == "active"`,
		"unit":        `status = "active"`,
		"model":       `forEach(units, u => true`,
		"machine":     `len(units) == 1`,
	} {
		_, err := parseQuery(q, kindNamed(t, kindName))
		var ue modelcmd.UsageError
		if err == nil || !errors.As(err, &ue) {
			t.Errorf("wait-for %s --query %s: %v, want a usage error", kindName, q, err)
		}
	}
}
