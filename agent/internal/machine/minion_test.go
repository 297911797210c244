package machine

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/agent/internal/apiconn"
	"github.com/droverhq/drover/agent/internal/fortress"
	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/internal/pki"
)

// fakeMinionConn serves one machine state and takes reports; events
// records reports and moves in order.
type fakeMinionConn struct {
	mu     sync.Mutex
	ms     *api.MachineState
	notify chan struct{}
	events []string
	last   api.MinionReport
	// disconnect answers this many calls ErrDisconnected; refuse, if set,
	// answers every call.
	disconnect int
	refuse     error
}

func newFakeMinionConn() *fakeMinionConn {
	return &fakeMinionConn{ms: &api.MachineState{Machine: "0"}, notify: make(chan struct{})}
}

func (f *fakeMinionConn) State() (*api.MachineState, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ms, f.notify
}

func (f *fakeMinionConn) set(m *api.AgentMigration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ms = &api.MachineState{Machine: "0", Migration: m}
	close(f.notify)
	f.notify = make(chan struct{})
}

func (f *fakeMinionConn) Call(_ context.Context, method string, params, _ any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if method != api.AgentMigrationReport {
		return api.Errorf(api.CodeBadRequest, "unexpected %s", method)
	}
	if f.disconnect > 0 {
		f.disconnect--
		return apiconn.ErrDisconnected
	}
	if f.refuse != nil {
		return f.refuse
	}
	r := params.(api.MinionReport)
	f.last = r
	f.events = append(f.events, "report "+r.Phase)
	return nil
}

func (f *fakeMinionConn) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.events...)
}

// newTestMinion is a minion of conn whose record lives in dir (the same
// dir: the same agent, restarted).
func newTestMinion(conn *fakeMinionConn, gate *fortress.Fortress, dir string) *minion {
	return &minion{conn: conn, dataDir: dir, tag: "machine-m-0", secret: "s3cret", gate: gate,
		retry: validateRetry{attempts: 3, delay: time.Millisecond, factor: 1.6}, log: slog.New(slog.DiscardHandler),
		move: func(t api.TargetController) error {
			conn.mu.Lock()
			defer conn.mu.Unlock()
			conn.events = append(conn.events, "move "+t.ControllerName)
			return nil
		}}
}

// phase runs one pass of the minion over the current state.
func (mn *minion) testPhase(t *testing.T, conn *fakeMinionConn) error {
	t.Helper()
	ms, changed := conn.State()
	return mn.phase(t.Context(), ms.Migration, changed)
}

// fakeTarget is a target controller's validate route: 204 for the
// agent's credential and migration mig-1.
func fakeTarget(t *testing.T) (*httptest.Server, string) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tag, secret, _ := r.BasicAuth()
		var req api.AgentValidateRequest
		json.NewDecoder(r.Body).Decode(&req)
		switch {
		case r.Method != http.MethodPost || r.URL.Path != api.PathAgentValidate:
			w.WriteHeader(http.StatusNotFound)
		case tag != "machine-m-0" || secret != "s3cret":
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(api.Error{Code: api.CodeUnauthorized, Message: "invalid agent tag or secret"})
		case req.MigrationID != "mig-1":
			w.WriteHeader(http.StatusConflict)
			json.NewEncoder(w).Encode(api.Error{Code: api.CodeConflict, Message: "not being imported by " + req.MigrationID})
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return srv, string(ca)
}

// deadAddr is an address nothing listens on.
func deadAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestMinionReportsEachPhaseOnce: QUIESCE is reported once no operation
// runs; VALIDATION after logging in to the target (its addresses in turn,
// TLS against its CA); SUCCESS before the move. A restarted agent sends
// no report again, and moves again (a no-op when it is there already).
func TestMinionReportsEachPhaseOnce(t *testing.T) {
	conn, dir := newFakeMinionConn(), t.TempDir()
	gate := fortress.New(conn.State)
	leave, ok := gate.Enter() // a hook runs
	if !ok {
		t.Fatal("the fortress refused an operation before any migration")
	}
	conn.set(&api.AgentMigration{ID: "mig-1", Phase: api.MigrationQuiesce})
	if _, ok := gate.Enter(); ok {
		t.Fatal("the fortress admitted an operation while the model migrates")
	}
	mn := newTestMinion(conn, gate, dir)
	// While the hook runs the minion waits: a state change ends its wait
	// with nothing sent.
	changed := make(chan struct{})
	close(changed)
	ms, _ := conn.State()
	if err := mn.phase(t.Context(), ms.Migration, changed); err != nil || len(conn.log()) != 0 {
		t.Fatalf("QUIESCE while an operation runs: %v, sent %v", err, conn.log())
	}
	leave()
	if err := mn.testPhase(t, conn); err != nil {
		t.Fatal(err)
	}
	if got := conn.log(); len(got) != 1 || got[0] != "report QUIESCE" || !conn.last.Success || conn.last.MigrationID != "mig-1" {
		t.Fatalf("after the hook: %v %+v", got, conn.last)
	}
	// Restarted: nothing is sent again.
	if err := newTestMinion(conn, gate, dir).testPhase(t, conn); err != nil || len(conn.log()) != 1 {
		t.Fatalf("a restarted minion: %v, %v", err, conn.log())
	}

	srv, ca := fakeTarget(t)
	target := &api.TargetController{ControllerUUID: "w", ControllerName: "west",
		Addresses: []string{deadAddr(t), srv.Listener.Addr().String()}, CACert: ca}
	conn.set(&api.AgentMigration{ID: "mig-1", Phase: api.MigrationValidation, Target: target})
	conn.disconnect = 2 // the report is retried over a lost connection
	if err := mn.testPhase(t, conn); err != nil {
		t.Fatal(err)
	}
	if got := conn.log(); len(got) != 2 || got[1] != "report VALIDATION" || !conn.last.Success {
		t.Fatalf("after VALIDATION: %v %+v", got, conn.last)
	}

	conn.set(&api.AgentMigration{ID: "mig-1", Phase: api.MigrationSuccess, Target: target})
	if err := mn.testPhase(t, conn); err != nil {
		t.Fatal(err)
	}
	if got := conn.log(); strings.Join(got[2:], ",") != "report SUCCESS,move west" {
		t.Fatalf("after SUCCESS: %v (the report comes first)", got)
	}
	if err := newTestMinion(conn, gate, dir).testPhase(t, conn); err != nil {
		t.Fatal(err)
	}
	if got := conn.log(); strings.Join(got[2:], ",") != "report SUCCESS,move west,move west" {
		t.Fatalf("a minion restarted at SUCCESS: %v (want no report, the move again)", got)
	}
}

// TestMinionReportsAFailedValidation: a credential the target refuses, or
// a target whose certificate its CA does not sign, is reported as a
// failure with the error; a report the controller refuses is not
// recorded, so it is made again.
func TestMinionReportsAFailedValidation(t *testing.T) {
	srv, ca := fakeTarget(t)
	other, err := pki.NewCA("another controller", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	otherCA := string(other.CertPEM)
	for name, c := range map[string]struct {
		target *api.TargetController
		secret string
		want   string
	}{
		"bad credential": {&api.TargetController{Addresses: []string{srv.Listener.Addr().String()}, CACert: ca}, "wrong", "invalid agent tag or secret"},
		"another CA":     {&api.TargetController{Addresses: []string{srv.Listener.Addr().String()}, CACert: otherCA}, "s3cret", "certificate"},
		"no target":      {&api.TargetController{CACert: ca}, "s3cret", "names no target controller"},
	} {
		t.Run(name, func(t *testing.T) {
			conn := newFakeMinionConn()
			mn := newTestMinion(conn, fortress.New(conn.State), t.TempDir())
			mn.secret = c.secret
			conn.set(&api.AgentMigration{ID: "mig-1", Phase: api.MigrationValidation, Target: c.target})
			if err := mn.testPhase(t, conn); err != nil {
				t.Fatal(err)
			}
			if r := conn.last; r.Success || r.Phase != api.MigrationValidation || !strings.Contains(r.Message, c.want) {
				t.Fatalf("report %+v, want a failure naming %q", r, c.want)
			}
		})
	}

	conn, dir := newFakeMinionConn(), t.TempDir()
	mn := newTestMinion(conn, fortress.New(conn.State), dir)
	conn.set(&api.AgentMigration{ID: "mig-1", Phase: api.MigrationQuiesce})
	conn.refuse = api.Errorf(api.CodeConflict, "model is not migrating")
	if err := mn.testPhase(t, conn); err == nil {
		t.Fatal("a refused report was taken as sent")
	}
	if _, err := os.Stat(filepath.Join(dir, "migration.json")); err == nil {
		t.Fatal("a refused report was recorded")
	}
	conn.refuse = nil
	if err := mn.testPhase(t, conn); err != nil || len(conn.log()) != 1 {
		t.Fatalf("the report made again: %v, %v", err, conn.log())
	}
}

// TestMinionMovesWhenTheSourceRefusesTheSuccessReport: at SUCCESS the
// model is the target's whatever the source answers (it may already have
// dropped the model): the agent moves.
func TestMinionMovesWhenTheSourceRefusesTheSuccessReport(t *testing.T) {
	conn := newFakeMinionConn()
	mn := newTestMinion(conn, fortress.New(conn.State), t.TempDir())
	conn.set(&api.AgentMigration{ID: "mig-1", Phase: api.MigrationSuccess,
		Target: &api.TargetController{ControllerName: "west", Addresses: []string{"127.0.0.1:1"}, CACert: "ca"}})
	conn.refuse = api.Errorf(api.CodeConflict, "model is not migrating")
	if err := mn.testPhase(t, conn); err != nil {
		t.Fatal(err)
	}
	if got := conn.log(); len(got) != 1 || got[0] != "move west" {
		t.Fatalf("after a refused SUCCESS report: %v, want the move", got)
	}
}
