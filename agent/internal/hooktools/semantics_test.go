package hooktools

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/droverhq/drover/agent/internal/hookctx"
	"github.com/droverhq/drover/api"
)

func mustRun(t *testing.T, hc *hookctx.Context, stdin *string, argv ...string) string {
	t.Helper()
	res := run(t, hc, stdin, argv[0], argv[1:]...)
	if res.Code != 0 {
		t.Fatalf("%v: code %d, stderr %q", argv, res.Code, res.Stderr)
	}
	return string(res.Stdout)
}

func TestRelationSetIsBufferedAndLocalViewShowsIt(t *testing.T) {
	f := newFixture()
	f.remote.leader = true
	hc := f.ctx(t)
	mustRun(t, hc, str(`{"a": "1", "private-address": ""}`), "relation-set", "-r", "db:1", "--file", "-", "b=2")
	mustRun(t, hc, str(`{"x": "y"}`), "relation-set", "-r", "db:1", "--app", "--file", "-")

	// Own unit bag and, as leader, own app bag: local view.
	if got := mustRun(t, hc, nil, "relation-get", "--format=json", "-r", "db:1", "-", "app/0"); got != `{"a":"1","b":"2"}`+"\n" {
		t.Errorf("own unit bag = %s", got)
	}
	if got := mustRun(t, hc, nil, "relation-get", "--format=json", "-r", "db:1", "--app", "-", "app"); got != `{"x":"y"}`+"\n" {
		t.Errorf("own app bag = %s", got)
	}
	// Nobody else sees the writes before the commit.
	if got := f.remote.bags[bagKey(1, "app/0", false)]; !reflect.DeepEqual(got, map[string]string{"private-address": "10.0.0.9"}) {
		t.Errorf("controller copy changed before Flush: %v", got)
	}
	other := newFixture()
	other.remote = f.remote
	other.cfg.Remote = f.remote
	other.cfg.Unit = "mysql/0"
	if got := mustRun(t, other.ctx(t), nil, "relation-get", "--format=json", "-r", "1", "-", "app/0"); got != `{"private-address":"10.0.0.9"}`+"\n" {
		t.Errorf("other reader sees %s", got)
	}

	ch := hc.Flush()
	want := []hookctx.RelationChanges{{ID: 1, Unit: map[string]string{"a": "1", "b": "2", "private-address": ""}, App: map[string]string{"x": "y"}}}
	if !reflect.DeepEqual(ch.Relations, want) {
		t.Errorf("Flush relations = %+v, want %+v", ch.Relations, want)
	}
}

func TestNonLeaderReadsOwnAppBagFromController(t *testing.T) {
	f := newFixture()
	hc := f.ctx(t)
	if got := mustRun(t, hc, nil, "relation-get", "--format=json", "-r", "peers:2", "--app", "-", "app"); got != `{"peer-key":"v"}`+"\n" {
		t.Errorf("peer app bag = %s", got)
	}
}

func TestRelationReadsAreCachedPerHook(t *testing.T) {
	f := newFixture()
	hc := f.ctx(t)
	mustRun(t, hc, nil, "relation-get", "-r", "1", "-", "mysql/0")
	f.remote.bags[bagKey(1, "mysql/0", false)]["host"] = "changed"
	if got := mustRun(t, hc, nil, "relation-get", "-r", "1", "host", "mysql/0"); got != "10.0.0.1\n" {
		t.Errorf("second read = %q, want the cached value", got)
	}
	if f.remote.reads != 1 {
		t.Errorf("controller reads = %d, want 1", f.remote.reads)
	}
}

func TestNetChangeDropsNoOps(t *testing.T) {
	f := newFixture()
	hc := f.ctx(t)
	mustRun(t, hc, nil, "relation-get", "-r", "1", "-", "app/0") // caches the base
	mustRun(t, hc, nil, "relation-set", "-r", "1", "private-address=10.0.0.9", "gone=")
	if ch := hc.Flush(); !ch.Empty() {
		t.Errorf("Flush = %+v, want empty", ch)
	}
}

func TestPortsAreBuffered(t *testing.T) {
	f := newFixture()
	hc := f.ctx(t)
	mustRun(t, hc, nil, "open-port", "8080")
	mustRun(t, hc, nil, "open-port", "9000-9010/udp", "--endpoints", "a,b")
	mustRun(t, hc, nil, "close-port", "80/tcp")
	mustRun(t, hc, nil, "open-port", "icmp") // already open: no-op
	if got := mustRun(t, hc, nil, "opened-ports", "--format=json"); got != `["icmp","80/tcp","1000-2000/udp"]`+"\n" {
		t.Errorf("opened-ports shows pending changes: %s", got)
	}
	ch := hc.Flush()
	wantOpen := []api.Port{{Protocol: "tcp", From: 8080, To: 8080}, {Protocol: "udp", From: 9000, To: 9010, Endpoints: []string{"a"}}, {Protocol: "udp", From: 9000, To: 9010, Endpoints: []string{"b"}}}
	if !reflect.DeepEqual(ch.OpenPorts, wantOpen) {
		t.Errorf("open = %+v", ch.OpenPorts)
	}
	if want := []api.Port{{Protocol: "tcp", From: 80, To: 80}}; !reflect.DeepEqual(ch.ClosePorts, want) {
		t.Errorf("close = %+v", ch.ClosePorts)
	}
}

func TestStateIsBuffered(t *testing.T) {
	f := newFixture()
	hc := f.ctx(t)
	mustRun(t, hc, str("a: x\n"), "state-set", "--file", "-")
	mustRun(t, hc, nil, "state-delete", "s")
	mustRun(t, hc, nil, "state-delete", "missing")
	if got := mustRun(t, hc, nil, "state-get", "--format=json"); got != `{"a":"x"}`+"\n" {
		t.Errorf("state-get = %s", got)
	}
	if f.cfg.State["s"] != "1" {
		t.Error("committed state was modified")
	}
	ch := hc.Flush()
	if !ch.StateChanged || !reflect.DeepEqual(ch.State, map[string]string{"a": "x"}) {
		t.Errorf("Flush state = %v %v", ch.StateChanged, ch.State)
	}
}

func TestImmediateWrites(t *testing.T) {
	f := newFixture()
	f.relationHook("db-relation-changed", "mysql/0")
	hc := f.ctx(t)
	mustRun(t, hc, nil, "status-set", "maintenance", "working")
	if f.remote.unitStatus.Status != "maintenance" || f.remote.unitStatus.Message != "working" {
		t.Errorf("status not written immediately: %+v", f.remote.unitStatus)
	}
	if !hc.StatusSet() {
		t.Error("StatusSet() = false")
	}
	mustRun(t, hc, nil, "application-version-set", "2.0")
	if f.remote.version != "2.0" {
		t.Errorf("version = %q", f.remote.version)
	}
	mustRun(t, hc, nil, "juju-log", "-l", "bogus", "hi", "there")
	mustRun(t, hc, nil, "juju-log", "--debug", "dbg")
	want := []string{"INFO unit.app/0.juju-log db:1: hi there", "DEBUG unit.app/0.juju-log db:1: dbg"}
	if !slices.Equal(f.remote.logs, want) {
		t.Errorf("logs = %q", f.remote.logs)
	}
	if !hc.Flush().Empty() {
		t.Error("immediate writes leaked into Flush")
	}
}

func TestLeadershipIsCached(t *testing.T) {
	f := newFixture()
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	f.cfg.Now = func() time.Time { return now }
	f.remote.leader = true
	hc := f.ctx(t)
	mustRun(t, hc, nil, "is-leader")
	now = now.Add(29 * time.Second)
	mustRun(t, hc, nil, "is-leader")
	if f.remote.leaderAsks != 1 {
		t.Errorf("asks = %d, want 1", f.remote.leaderAsks)
	}
	now = now.Add(2 * time.Second)
	mustRun(t, hc, nil, "is-leader")
	if f.remote.leaderAsks != 2 {
		t.Errorf("asks = %d, want 2", f.remote.leaderAsks)
	}
}

func TestActionOutcome(t *testing.T) {
	f := newFixture().action(nil)
	hc := f.ctx(t)
	mustRun(t, hc, nil, "action-set", "outfile.size=10G", "foo.bar=2", "foo.baz.val=3", "foo.bar.zab=4", "foo.baz=1")
	mustRun(t, hc, nil, "action-log", "step", "1")
	mustRun(t, hc, nil, "action-fail")
	out := hc.Action().Outcome()
	want := map[string]any{"outfile": map[string]any{"size": "10G"}, "foo": map[string]any{"bar": map[string]any{"zab": "4"}, "baz": "1"}}
	if !reflect.DeepEqual(out.Results, want) {
		t.Errorf("results = %v", out.Results)
	}
	if !out.Failed || out.Message != hookctx.DefaultActionFailMessage {
		t.Errorf("outcome = %+v", out)
	}
	if !slices.Equal(f.remote.actionLogs, []string{"step 1"}) {
		t.Errorf("action logs = %q", f.remote.actionLogs)
	}
}
