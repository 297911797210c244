package state

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/hashicorp/raft"
)

const testModel = "model-uuid-1"

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// harness drives an FSM through encoded commands, as raft would.
type harness struct {
	t     testing.TB
	fsm   *FSM
	index uint64
	log   [][]byte
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	f, err := NewFSM(FSMConfig{Logger: slog.New(slog.DiscardHandler), EventBufferSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, fsm: f}
}

// apply encodes req, applies it at the next index and returns the result.
func (h *harness) apply(typ MessageType, req any) (any, error) {
	h.t.Helper()
	buf, err := Encode(typ, req)
	if err != nil {
		h.t.Fatalf("encode %v: %v", typ, err)
	}
	h.log = append(h.log, buf)
	h.index++
	res, ok := h.fsm.Apply(&raft.Log{Index: h.index, Type: raft.LogCommand, Data: buf}).(ApplyResult)
	if !ok {
		h.t.Fatalf("apply %v: result is not an ApplyResult", typ)
	}
	return res.Value, res.Err
}

func (h *harness) must(typ MessageType, req any) any {
	h.t.Helper()
	v, err := h.apply(typ, req)
	if err != nil {
		h.t.Fatalf("%v: %v", typ, err)
	}
	return v
}

// fails applies a command that must fail with sentinel.
func (h *harness) fails(typ MessageType, req any, sentinel error) error {
	h.t.Helper()
	_, err := h.apply(typ, req)
	if !errors.Is(err, sentinel) {
		h.t.Fatalf("%v: got error %v, want %v", typ, err, sentinel)
	}
	return err
}

func (h *harness) snap() *Snapshot { return h.fsm.Store().Snapshot() }

func sha(name string) string { return fmt.Sprintf("%x", sha256.Sum256([]byte(name))) }

// Test charms: kv provides "db" and has a peer; web requires db twice
// (so web-kv is ambiguous); logger is a container-scoped subordinate.
var testCharms = []api.Charm{
	{SHA256: sha("kv"), Name: "kv", Endpoints: []api.Endpoint{
		{Name: "db", Role: api.RoleProvider, Interface: "kv"},
		{Name: "cluster", Role: api.RolePeer, Interface: "kv-peers"},
	}},
	{SHA256: sha("web"), Name: "web", Endpoints: []api.Endpoint{
		{Name: "db", Role: api.RoleRequirer, Interface: "kv"},
		{Name: "cache", Role: api.RoleRequirer, Interface: "kv"},
		{Name: "website", Role: api.RoleProvider, Interface: "http"},
	}},
	{SHA256: sha("logger"), Name: "logger", Subordinate: true, Endpoints: []api.Endpoint{
		{Name: "host", Role: api.RoleRequirer, Interface: "juju-info", Scope: "container"},
	}},
	{SHA256: sha("proxy"), Name: "proxy", Endpoints: []api.Endpoint{
		{Name: "backend", Role: api.RoleRequirer, Interface: "http"},
	}},
	{SHA256: sha("kv2"), Name: "kv", Endpoints: []api.Endpoint{
		{Name: "cluster", Role: api.RolePeer, Interface: "kv-peers"},
	}},
}

// seed creates the model and uploads the test charms.
func (h *harness) seed() {
	h.t.Helper()
	h.must(AddModelType, &AddModelRequest{UUID: testModel, Name: "m", Owner: "admin", Now: t0})
	for _, c := range testCharms {
		h.must(AddCharmType, &AddCharmRequest{Charm: c})
	}
}

func (h *harness) deploy(name, charm string, n int, placement ...string) *AddApplicationResult {
	h.t.Helper()
	return h.must(AddApplicationType, &AddApplicationRequest{ModelUUID: testModel, Name: name,
		CharmSHA256: sha(charm), NumUnits: n, Placement: placement, Now: t0}).(*AddApplicationResult)
}

func (h *harness) relate(a, b string) *api.Relation {
	h.t.Helper()
	return h.must(AddRelationType, &AddRelationRequest{ModelUUID: testModel, Endpoints: [2]string{a, b}, Now: t0}).(*api.Relation)
}

func (h *harness) unit(name string) *api.Unit {
	h.t.Helper()
	u, err := h.snap().UnitByName(testModel, name)
	if err != nil {
		h.t.Fatal(err)
	}
	return u
}

func (h *harness) app(name string) *api.Application {
	h.t.Helper()
	a, err := h.snap().ApplicationByName(testModel, name)
	if err != nil {
		h.t.Fatal(err)
	}
	return a
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
