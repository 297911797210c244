package status

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state"
	"github.com/hashicorp/raft"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const testModel = "model-1"

var t0 = time.Date(2026, 11, 21, 21, 32, 40, 0, time.UTC)

// fsm applies encoded commands at increasing indexes, as raft would.
type fsm struct {
	t     *testing.T
	f     *state.FSM
	index uint64
}

func newFSM(t *testing.T) *fsm {
	t.Helper()
	f, err := state.NewFSM(state.FSMConfig{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return &fsm{t: t, f: f}
}

func (h *fsm) must(typ state.MessageType, req any) any {
	h.t.Helper()
	buf, err := state.Encode(typ, req)
	if err != nil {
		h.t.Fatalf("encode %v: %v", typ, err)
	}
	h.index++
	res, ok := h.f.Apply(&raft.Log{Index: h.index, Type: raft.LogCommand, Data: buf}).(state.ApplyResult)
	if !ok || res.Err != nil {
		h.t.Fatalf("%v: %v", typ, res.Err)
	}
	return res.Value
}

func sha(name string) string { return fmt.Sprintf("%x", sha256.Sum256([]byte(name))) }

var charms = []api.Charm{
	{SHA256: sha("kv"), Name: "kv", Endpoints: []api.Endpoint{
		{Name: "db", Role: api.RoleProvider, Interface: "kv"},
		{Name: "cluster", Role: api.RolePeer, Interface: "kv-peers"},
	}},
	{SHA256: sha("web"), Name: "web", Endpoints: []api.Endpoint{
		{Name: "db", Role: api.RoleRequirer, Interface: "kv"},
		{Name: "website", Role: api.RoleProvider, Interface: "http"},
	}},
	{SHA256: sha("logger"), Name: "logger", Subordinate: true, Endpoints: []api.Endpoint{
		{Name: "host", Role: api.RoleRequirer, Interface: "juju-info", Scope: "container"},
	}},
}

func (h *fsm) seed() {
	h.must(state.AddModelType, &state.AddModelRequest{UUID: testModel, Name: "default", Owner: "admin", Now: t0})
	for _, c := range charms {
		h.must(state.AddCharmType, &state.AddCharmRequest{Charm: c})
	}
}

func (h *fsm) deploy(app, charm string, n int, base string) {
	h.must(state.AddApplicationType, &state.AddApplicationRequest{ModelUUID: testModel, Name: app,
		CharmSHA256: sha(charm), NumUnits: n, Base: base, Now: t0})
}

func (h *fsm) relate(a, b string) {
	h.must(state.AddRelationType, &state.AddRelationRequest{ModelUUID: testModel, Endpoints: [2]string{a, b}, Now: t0})
}

func (h *fsm) status(kind, entity, status, msg string, at time.Duration) {
	h.must(state.SetStatusType, &state.SetStatusRequest{ModelUUID: testModel, Kind: kind, Entity: entity,
		Status: api.Status{Status: status, Message: msg, Since: t0.Add(at)}})
}

// full is the whole scenario: two related applications (one with a peer
// relation), a subordinate on every unit of one, statuses, ports, a
// workload version and a leader.
func full(h *fsm) {
	h.deploy("kv", "kv", 2, "")
	h.deploy("web", "web", 1, "ubuntu@24.04")
	h.deploy("logger", "logger", 0, "")
	h.relate("web", "kv")
	h.relate("logger", "kv")
	h.must(state.SetMachineProvisionedType, &state.SetMachineProvisionedRequest{ModelUUID: testModel, ID: "0",
		ProviderID: "drover-0", Addresses: []string{"10.0.0.10", "kv-0.lxd"}})
	h.must(state.SetMachineProvisionedType, &state.SetMachineProvisionedRequest{ModelUUID: testModel, ID: "1",
		ProviderID: "drover-1", Addresses: []string{"10.0.0.11"}})
	h.status(api.StatusKindMachine, "0", "started", "", time.Minute)
	h.status(api.StatusKindInstance, "0", "running", "", time.Minute)
	h.status(api.StatusKindMachine, "1", "started", "", time.Minute)
	h.status(api.StatusKindInstance, "1", "running", "", time.Minute)
	h.status(api.StatusKindAgent, "kv/0", "idle", "", 2*time.Minute)
	h.status(api.StatusKindWorkload, "kv/0", "active", "ready", 2*time.Minute)
	h.status(api.StatusKindAgent, "kv/1", "executing", "running config-changed hook", 2*time.Minute)
	h.status(api.StatusKindWorkload, "kv/1", "blocked", "needs a peer", 3*time.Minute)
	h.status(api.StatusKindApplication, "web", "waiting", "waiting for database", 4*time.Minute)
	h.status(api.StatusKindWorkload, "logger/0", "active", "", 4*time.Minute)
	h.must(state.SetUnitPortsType, &state.SetUnitPortsRequest{ModelUUID: testModel, Unit: "kv/0", Open: []api.Port{
		{Protocol: "tcp", From: 8080, To: 8080}, {Protocol: "udp", From: 1000, To: 2000}, {Protocol: "icmp"},
	}})
	h.must(state.SetWorkloadVersionType, &state.SetWorkloadVersionRequest{ModelUUID: testModel, Unit: "kv/1", Version: "7.2.4"})
	h.must(state.ClaimLeaseType, &state.ClaimLeaseRequest{ModelUUID: testModel, App: "kv", Unit: "kv/0", Now: t0, Duration: time.Minute})
	// web's lease has lapsed by the time of the status: no leader shown.
	h.must(state.ClaimLeaseType, &state.ClaimLeaseRequest{ModelUUID: testModel, App: "web", Unit: "web/0", Now: t0, Duration: time.Second})
	h.must(state.EnterScopeType, &state.EnterScopeRequest{ModelUUID: testModel, RelationID: 1, Unit: "kv/0"})
}

func TestBuild(t *testing.T) {
	ctl := Context{ControllerName: "ctl", Region: "home", Version: "0.1.0", Now: t0.Add(30 * time.Second)}
	for _, tc := range []struct {
		name  string
		build func(*fsm)
	}{
		{"empty", func(*fsm) {}},
		{"full", full},
		{"dying", func(h *fsm) {
			full(h)
			h.must(state.DestroyRelationType, &state.DestroyRelationRequest{ModelUUID: testModel, ID: 1})
			h.must(state.DestroyMachineType, &state.DestroyMachineRequest{ModelUUID: testModel, ID: "2", Force: true})
			h.must(state.DestroyModelType, &state.DestroyModelRequest{ModelUUID: testModel, Now: t0})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newFSM(t)
			h.seed()
			tc.build(h)
			st, err := Build(h.f.Store().Snapshot(), testModel, ctl)
			if err != nil {
				t.Fatal(err)
			}
			if st.Index != h.index {
				t.Errorf("index %d, want %d", st.Index, h.index)
			}
			got, err := json.MarshalIndent(st, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := filepath.Join("testdata", "status-"+tc.name+".json")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("status differs from %s (run with -update to accept):\n%s", golden, got)
			}
		})
	}
}

func TestBuildStatusUnknownModel(t *testing.T) {
	h := newFSM(t)
	_, err := Build(h.f.Store().Snapshot(), "nope", Context{})
	if !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("got %v, want not-found", err)
	}
}

func TestDerivedApplicationStatus(t *testing.T) {
	unit := func(st string) *api.Unit {
		return &api.Unit{WorkloadStatus: api.Status{Status: st, Message: st + " msg"}}
	}
	for _, tc := range []struct {
		app   string
		units []string
		want  string
	}{
		{"unknown", nil, "unknown"},
		{"unknown", []string{"active", "waiting"}, "waiting"},
		{"unknown", []string{"maintenance", "waiting", "active"}, "maintenance"},
		{"unknown", []string{"active", "blocked", "maintenance"}, "blocked"},
		{"unknown", []string{"blocked", "error", "active"}, "error"},
		{"", []string{"active"}, "active"},
		{"active", []string{"error"}, "active"}, // set explicitly by the leader
	} {
		var units []*api.Unit
		for _, s := range tc.units {
			units = append(units, unit(s))
		}
		b := &statusBuilder{}
		got := b.appStatusDetail(&api.Application{Status: api.Status{Status: tc.app}}, units)
		if got.Current != tc.want {
			t.Errorf("app %q units %v: %q, want %q", tc.app, tc.units, got.Current, tc.want)
		}
		if tc.app == "unknown" && len(units) > 0 && got.Message != tc.want+" msg" {
			t.Errorf("derived message %q, want the unit's", got.Message)
		}
	}
}

func TestFormatPorts(t *testing.T) {
	got := formatPorts([]api.Port{
		{Protocol: "udp", From: 1000, To: 2000}, {Protocol: "tcp", From: 80, To: 80},
		{Protocol: "icmp"}, {Protocol: "tcp", From: 443}, {Protocol: "tcp", From: 80, To: 80, Endpoints: []string{"db"}},
	})
	want := []string{"icmp", "80/tcp", "443/tcp", "1000-2000/udp"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// TestFailedHookShownAsWorkloadError: a unit whose agent is in error shows
// workload "error" with the agent's message and agent "idle", as juju
// status does (CHARM-CONTRACT 2.5), and its application derives "error".
func TestFailedHookShownAsWorkloadError(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 14, 0, 0, 0, time.UTC)
	u := &api.Unit{Name: "f/0", Application: "f",
		WorkloadStatus: api.Status{Status: "maintenance", Message: "installing charm software", Since: t0},
		AgentStatus:    api.Status{Status: "error", Message: `hook failed: "install"`, Since: t0.Add(time.Second)}}
	b := &statusBuilder{ctl: Context{Now: t0}}
	us, err := b.unitStatus(u, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if us.WorkloadStatus.Current != "error" || us.WorkloadStatus.Message != `hook failed: "install"` ||
		us.JujuStatus.Current != "idle" || us.JujuStatus.Message != "" || us.JujuStatus.Since != us.WorkloadStatus.Since {
		t.Errorf("unit in error: workload %+v, agent %+v", us.WorkloadStatus, us.JujuStatus)
	}
	if got := b.appStatusDetail(&api.Application{Status: api.Status{Status: "unknown"}}, []*api.Unit{u}); got.Current != "error" ||
		got.Message != `hook failed: "install"` {
		t.Errorf("its application: %+v", got)
	}
}
