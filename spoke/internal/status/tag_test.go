package status

import (
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state"
)

// TestStatusTagMatching: a status ETag matches only the status it was
// given for (this server, this store, this revision) and only while the
// leases it shows held have not run out; "*", lists and garbage are
// handled.
func TestStatusTagMatching(t *testing.T) {
	now := t0
	cur := statusTag{epoch: "e1", gen: 2, rev: 40}
	held := cur
	held.until = now.Add(time.Second).UnixNano()
	lapsed := cur
	lapsed.until = now.UnixNano()
	for _, tc := range []struct {
		name string
		hs   []string
		want string
	}{
		{"its own tag", []string{cur.String()}, cur.String()},
		{"strong form", []string{`"e1.2.40.0"`}, `"e1.2.40.0"`},
		{"in a list", []string{`W/"x.1.1.0", ` + cur.String()}, cur.String()},
		{"in a second header", []string{`W/"x.1.1.0"`, cur.String()}, cur.String()},
		{"leases still held", []string{held.String()}, held.String()},
		{"a lease ran out", []string{lapsed.String()}, ""},
		{"another server", []string{statusTag{epoch: "e2", gen: 2, rev: 40}.String()}, ""},
		{"another generation", []string{statusTag{epoch: "e1", gen: 3, rev: 40}.String()}, ""},
		{"an older revision", []string{statusTag{epoch: "e1", gen: 2, rev: 39}.String()}, ""},
		{"any", []string{"*"}, ""},
		{"garbage", []string{`W/"e1.2.40"`, `"e1.2.x.0"`, `e1.2.40.0`, `W/"`, ``, `"..."`}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := notModified(tc.hs, cur, now)
			if got != tc.want || ok != (tc.want != "") {
				t.Fatalf("notModified(%q) = %q, %v; want %q", tc.hs, got, ok, tc.want)
			}
		})
	}
}

// FuzzParseStatusTag: any If-None-Match value parses or is refused
// without panicking, and what parses is what String writes back.
func FuzzParseStatusTag(f *testing.F) {
	for _, s := range []string{`W/"0011aabb.0.12.0"`, `"e.1.2.3"`, `W/"e.1.2.-5"`, `*`, `W/""`, `"a.b.c.d"`, `W/"e.18446744073709551615.1.1"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tag, ok := parseStatusTag(s)
		if !ok {
			return
		}
		again, ok := parseStatusTag(tag.String())
		if !ok || again != tag {
			t.Fatalf("%q parsed as %+v, which writes %q and parses as %+v, %v", s, tag, tag.String(), again, ok)
		}
	})
}

// TestBuildStatusUntil: a status stays what it is until the first lease
// it shows held runs out; a lease whose holder outlived its expiry makes
// it good for no time at all (a claim may extend that lease without a new
// status revision); no lease, no bound.
func TestBuildStatusUntil(t *testing.T) {
	ctl := Context{ControllerName: "ctl", Now: t0.Add(30 * time.Second)}
	until := func(h *fsm) time.Time {
		t.Helper()
		_, u, err := build(h.f.Store().Snapshot(), testModel, ctl)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	h := newFSM(t)
	h.seed()
	h.deploy("kv", "kv", 1, "")
	h.deploy("web", "web", 1, "")
	if u := until(h); !u.IsZero() {
		t.Fatalf("no lease held: until %v", u)
	}
	h.must(state.ClaimLeaseType, &state.ClaimLeaseRequest{ModelUUID: testModel, App: "kv", Unit: "kv/0", Now: t0, Duration: time.Minute})
	if u := until(h); !u.Equal(t0.Add(time.Minute)) {
		t.Fatalf("kv's lease held until t0+1m: until %v", u)
	}
	h.must(state.ClaimLeaseType, &state.ClaimLeaseRequest{ModelUUID: testModel, App: "web", Unit: "web/0", Now: t0, Duration: time.Second})
	if u := until(h); !u.Equal(ctl.Now) {
		t.Fatalf("web's lease lapsed with a holder: until %v, want the status's own time %v", u, ctl.Now)
	}
}

// TestStatusOfRevalidates: the status route's answer to its own ETag is
// "not modified" until the model changes or a lease the status shows held
// runs out, and then a new status (no leader shown) with a new tag.
func TestStatusOfRevalidates(t *testing.T) {
	h := newFSM(t)
	h.seed()
	h.deploy("kv", "kv", 1, "")
	h.must(state.ClaimLeaseType, &state.ClaimLeaseRequest{ModelUUID: testModel, App: "kv", Unit: "kv/0", Now: t0, Duration: time.Minute})
	now := t0.Add(30 * time.Second)
	epoch := NewEpoch()
	// answer is the status route's: the context as of now, this epoch.
	answer := func(epoch string, inm []string) (*api.FullStatus, string, error) {
		snap := h.f.Store().Snapshot()
		return Answer(snap, testModel, epoch, ContextOf(snap, now), inm)
	}
	status := func(inm ...string) (*api.FullStatus, string) {
		t.Helper()
		st, tag, err := answer(epoch, inm)
		if err != nil {
			t.Fatal(err)
		}
		return st, tag
	}
	st, tag := status()
	if st == nil || !st.Applications["kv"].Units["kv/0"].Leader {
		t.Fatalf("first status: %+v", st)
	}
	if again, v := status(tag); again != nil || v != tag {
		t.Fatalf("its own tag, nothing changed: status %v, tag %q", again != nil, v)
	}
	// A lease renewed (same holder) moves no revision: still not modified.
	h.must(state.ClaimLeaseType, &state.ClaimLeaseRequest{ModelUUID: testModel, App: "kv", Unit: "kv/0", Now: now, Duration: time.Minute})
	if again, _ := status(tag); again != nil {
		t.Fatal("built again after a renewal")
	}
	// Past the expiry the copy shows: built again, whatever the renewal.
	now = t0.Add(61 * time.Second)
	st, tag2 := status(tag)
	if st == nil || tag2 == tag || !st.Applications["kv"].Units["kv/0"].Leader {
		t.Fatalf("past the copy's lease expiry: %+v, tag %q (was %q)", st, tag2, tag)
	}
	// A change builds it again.
	h.must(state.SetStatusType, &state.SetStatusRequest{ModelUUID: testModel, Kind: "workload", Entity: "kv/0",
		Status: api.Status{Status: "active", Since: t0}})
	if st, tag3 := status(tag2); st == nil || tag3 == tag2 || st.Applications["kv"].Units["kv/0"].WorkloadStatus.Current != "active" {
		t.Fatalf("after a change: %+v, tag %q", st, tag3)
	}
	// Another server's tag never matches.
	if st, _, err := answer(NewEpoch(), []string{tag2}); err != nil || st == nil {
		t.Fatalf("another server's answer to this one's tag: %v %v", st, err)
	}
}
