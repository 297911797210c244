package hooktools

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/agent/internal/hookctx"
	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/charm"
)

// fakeRemote is an in-memory controller.
type fakeRemote struct {
	mu         sync.Mutex
	bags       map[string]map[string]string // "id/name/app"
	reads      int
	leader     bool
	leaderErr  error
	leaderAsks int
	unitStatus api.Status
	appStatus  api.Status
	version    string
	leaderSet  map[string]string
	actionLogs []string
	network    map[string]hookctx.NetworkInfo
	goal       hookctx.GoalState
	logs       []string
}

func bagKey(id int, name string, app bool) string { return fmt.Sprintf("%d/%s/%v", id, name, app) }

func (f *fakeRemote) ReadSettings(_ context.Context, id int, name string, app bool) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	return maps.Clone(f.bags[bagKey(id, name, app)]), nil
}

func (f *fakeRemote) IsLeader(context.Context) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leaderAsks++
	return f.leader, f.leaderErr
}

func (f *fakeRemote) UnitStatus(context.Context) (api.Status, error) { return f.unitStatus, nil }
func (f *fakeRemote) SetUnitStatus(_ context.Context, st api.Status) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unitStatus = st
	return nil
}
func (f *fakeRemote) ApplicationStatus(context.Context) (hookctx.ApplicationStatus, error) {
	return hookctx.ApplicationStatus{Application: f.appStatus, Units: map[string]api.Status{"app/0": f.unitStatus}}, nil
}
func (f *fakeRemote) SetApplicationStatus(_ context.Context, st api.Status) error {
	f.appStatus = st
	return nil
}
func (f *fakeRemote) SetWorkloadVersion(_ context.Context, v string) error { f.version = v; return nil }
func (f *fakeRemote) LeaderSettings(context.Context) (map[string]string, error) {
	return maps.Clone(f.leaderSet), nil
}
func (f *fakeRemote) SetLeaderSettings(_ context.Context, kv map[string]string) error {
	if f.leaderSet == nil {
		f.leaderSet = map[string]string{}
	}
	maps.Copy(f.leaderSet, kv)
	return nil
}
func (f *fakeRemote) NetworkInfo(_ context.Context, b string, _ int) (hookctx.NetworkInfo, error) {
	ni, ok := f.network[b]
	if !ok {
		return ni, fmt.Errorf("binding %q: %w", b, hookctx.ErrNotFound)
	}
	return ni, nil
}
func (f *fakeRemote) GoalState(context.Context) (hookctx.GoalState, error) { return f.goal, nil }
func (f *fakeRemote) LogAction(_ context.Context, m string) error {
	f.actionLogs = append(f.actionLogs, m)
	return nil
}

// fixture builds a context for app/0 with a db relation (id 1, remote
// mysql with mysql/0 and mysql/1) and a peer relation (id 2).
type fixture struct {
	remote *fakeRemote
	cfg    hookctx.Config
}

func newFixture() *fixture {
	r := &fakeRemote{
		bags: map[string]map[string]string{
			bagKey(1, "mysql/0", false): {"host": "10.0.0.1", "port": "3306"},
			bagKey(1, "mysql", true):    {"password": "12345"},
			bagKey(1, "app/0", false):   {"private-address": "10.0.0.9"},
			bagKey(2, "app", true):      {"peer-key": "v"},
		},
		unitStatus: api.Status{Status: "active", Message: "ok", Data: map[string]any{"k": "v"}},
		appStatus:  api.Status{Status: "waiting", Message: "w"},
		network: map[string]hookctx.NetworkInfo{"db": {
			BindAddresses:    []hookctx.Interface{{MACAddress: "aa", InterfaceName: "eth0", Addresses: []hookctx.Address{{Value: "10.0.0.9", CIDR: "10.0.0.0/24"}}}},
			EgressSubnets:    []string{"10.0.0.9/32"},
			IngressAddresses: []string{"10.0.0.9"},
		}},
		goal: hookctx.GoalState{
			Units:     map[string]hookctx.GoalStatus{"app/0": {Status: "active", Since: time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)}},
			Relations: map[string]map[string]hookctx.GoalStatus{"db": {"mysql": {Status: "joined", Since: time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)}}},
		},
	}
	ccfg, err := charm.ParseConfig([]byte("options:\n  name: {type: string, default: x}\n  n: {type: int, default: 3}\n  f: {type: float}\n  b: {type: boolean, default: true}\n"))
	if err != nil {
		panic(err)
	}
	f := &fixture{remote: r}
	f.cfg = hookctx.Config{
		Unit: "app/0", ModelName: "m", ModelUUID: "uuid-m",
		Relations: []hookctx.Relation{
			{ID: 1, Endpoint: "db", RemoteApp: "mysql", Members: []string{"mysql/1", "mysql/0"}, Life: api.Alive},
			{ID: 2, Endpoint: "peers", RemoteApp: "app", Members: []string{"app/1"}, Life: api.Alive},
		},
		Charm: ccfg, Settings: charm.Settings{"n": int64(7)},
		OpenedPorts:    []api.Port{{Protocol: "tcp", From: 80, To: 80}, {Protocol: "udp", From: 1000, To: 2000, Endpoints: []string{"b", "a"}}, {Protocol: "icmp"}},
		State:          map[string]string{"s": "1"},
		PrivateAddress: "10.0.0.9", PublicAddress: "1.2.3.4",
		Remote: r,
		Log: func(level, module, msg string) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.logs = append(r.logs, level+" "+module+" "+msg)
		},
	}
	return f
}

// relationHook makes the fixture a hook of relation 1.
func (f *fixture) relationHook(hook, remoteUnit string) *fixture {
	f.cfg.Hook = hook
	f.cfg.Relation = &hookctx.HookRelation{ID: 1, RemoteUnit: remoteUnit, RemoteApp: "mysql"}
	return f
}

func (f *fixture) action(params map[string]any) *fixture {
	f.cfg.Action = &hookctx.Action{Name: "do", ID: "1", Params: params}
	return f
}

func (f *fixture) ctx(t *testing.T) *hookctx.Context {
	t.Helper()
	hc, err := hookctx.New(f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	return hc
}

// run runs a tool with stdin supplied on demand, as the client does.
func run(t *testing.T, hc *hookctx.Context, stdin *string, name string, args ...string) Result {
	t.Helper()
	inv := Invocation{Name: name, Args: args, Dir: t.TempDir()}
	res := Run(t.Context(), hc, inv)
	if res.NeedStdin {
		if stdin == nil {
			t.Fatalf("%s asked for stdin, none in test", name)
		}
		inv.Stdin, inv.StdinSet = []byte(*stdin), true
		res = Run(t.Context(), hc, inv)
	}
	return res
}

func str(s string) *string { return &s }

// ResourceGet has one resource, "conf", at /resources/conf/conf.txt.
func (f *fakeRemote) ResourceGet(ctx context.Context, name string) (string, error) {
	if name != "conf" {
		return "", fmt.Errorf("%w: resource %q", hookctx.ErrNotFound, name)
	}
	return "/resources/conf/conf.txt", nil
}
