package outbox_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/hubtest"
	"github.com/droverhq/drover/hub/internal/outbox"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/tests/testkit"
)

func TestMain(m *testing.M) { os.Exit(hubtest.Main(m)) }

func grantTuple() authz.Tuple {
	return authz.Tuple{User: authz.UserObject("alice"), Relation: authz.Reader, Object: authz.ModelObject("m1")}
}

func allowed(t *testing.T, c *authz.Client, tu authz.Tuple) func() (bool, error) {
	return func() (bool, error) { return c.Check(t.Context(), tu.User, tu.Relation, tu.Object) }
}

// A worker killed after the grant's commit but before the OpenFGA write
// leaves the entry pending; a new worker delivers it.
func TestOutboxSurvivesCrashBeforeWrite(t *testing.T) {
	st, fga := hubtest.Store(t), hubtest.Authz(t)
	tu := grantTuple()
	if err := st.Grants.Add(t.Context(), tu); err != nil {
		t.Fatal(err)
	}
	ctx, crash := context.WithCancel(t.Context())
	w1, err := outbox.New(outbox.Config{Store: st, Authz: fga, BeforeWrite: crash})
	if err != nil {
		t.Fatal(err)
	}
	if err := w1.Run(ctx); err != context.Canceled {
		t.Fatalf("crashed worker returned %v", err)
	}
	if ok, err := fga.Check(t.Context(), tu.User, tu.Relation, tu.Object); err != nil || ok {
		t.Fatalf("tuple delivered before crash: %v %v", ok, err)
	}
	if p, _ := st.Outbox.Pending(t.Context(), 10); len(p) != 1 {
		t.Fatalf("pending after crash: %v", p)
	}
	runWorker(t, st, fga)
	testkit.Eventually(t.Context(), t, allowed(t, fga, tu), "grant delivered by the new worker")
	testkit.Eventually(t.Context(), t, func() (bool, error) {
		p, err := st.Outbox.Pending(t.Context(), 10)
		return len(p) == 0, err
	}, "outbox drained")
}

// A worker killed after the write but before marking the entry delivered
// makes the next worker deliver it again, harmlessly.
func TestOutboxRedeliveryAfterCrashIsIdempotent(t *testing.T) {
	st, fga := hubtest.Store(t), hubtest.Authz(t)
	tu := grantTuple()
	if err := st.Grants.Add(t.Context(), tu); err != nil {
		t.Fatal(err)
	}
	ctx, crash := context.WithCancel(t.Context())
	w1, _ := outbox.New(outbox.Config{Store: st, Authz: fga, AfterWrite: crash})
	_ = w1.Run(ctx)
	if p, _ := st.Outbox.Pending(t.Context(), 10); len(p) != 1 {
		t.Fatalf("pending after crash: %v", p)
	}
	w2, _ := outbox.New(outbox.Config{Store: st, Authz: fga})
	if n, err := w2.DeliverOnce(t.Context()); err != nil || n != 1 {
		t.Fatalf("redeliver: %d %v", n, err)
	}
	if ok, _ := fga.Check(t.Context(), tu.User, tu.Relation, tu.Object); !ok {
		t.Fatal("tuple missing after redelivery")
	}
	// Grant then revoke in one batch: the last operation wins.
	if err := st.Grants.Revoke(t.Context(), []authz.Tuple{tu}, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Grants.Add(t.Context(), tu); err != nil {
		t.Fatal(err)
	}
	if err := st.Grants.Revoke(t.Context(), []authz.Tuple{tu}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := w2.DeliverOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if ok, _ := fga.Check(t.Context(), tu.User, tu.Relation, tu.Object); ok {
		t.Fatal("revoked tuple still present")
	}
}

func TestReconcilerRepairsDrift(t *testing.T) {
	st, fga := hubtest.Store(t), hubtest.Authz(t)
	tu := grantTuple()
	if err := st.Grants.Add(t.Context(), tu); err != nil {
		t.Fatal(err)
	}
	w, _ := outbox.New(outbox.Config{Store: st, Authz: fga})
	if _, err := w.DeliverOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Drift: someone deletes the grant and adds a stray tuple in OpenFGA.
	stray := authz.Tuple{User: authz.UserObject("mallory"), Relation: authz.Administrator, Object: authz.ModelObject("m1")}
	if err := fga.Write(t.Context(), []authz.Tuple{stray}, []authz.Tuple{tu}); err != nil {
		t.Fatal(err)
	}
	n, err := w.Reconcile(t.Context())
	if err != nil || n != 2 {
		t.Fatalf("reconcile queued %d repairs, %v", n, err)
	}
	if _, err := w.DeliverOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	got, err := fga.ReadAll(t.Context(), authz.ReadFilter{})
	if err != nil || len(got) != 1 || got[0] != tu {
		t.Fatalf("after repair: %v %v", got, err)
	}
	if n, err := w.Reconcile(t.Context()); err != nil || n != 0 {
		t.Fatalf("second reconcile: %d %v", n, err)
	}
}

func runWorker(t *testing.T, st *store.Store, fga *authz.Client) {
	w, err := outbox.New(outbox.Config{Store: st, Authz: fga})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// TestRestoredAfterStartRepairs: a worker on an OpenFGA store that lost
// the tuples (a new one) says it has restored them only once the start's
// reconcile has queued them and every batch is delivered, and says it once.
func TestRestoredAfterStartRepairs(t *testing.T) {
	st, lost := hubtest.Store(t), hubtest.Authz(t)
	const n = 250 // batches of 100
	for i := range n {
		tu := authz.Tuple{User: authz.UserObject(fmt.Sprintf("u%d", i)), Relation: authz.Reader, Object: authz.ModelObject("m1")}
		if err := st.Grants.Add(t.Context(), tu); err != nil {
			t.Fatal(err)
		}
	}
	first, _ := outbox.New(outbox.Config{Store: st, Authz: hubtest.Authz(t)})
	for {
		if k, err := first.DeliverOnce(t.Context()); err != nil {
			t.Fatal(err)
		} else if k == 0 {
			break
		}
	}
	held := make(chan int, 2)
	w, _ := outbox.New(outbox.Config{Store: st, Authz: lost, ReconcileEvery: time.Hour, Restored: func() {
		got, err := lost.ReadAll(t.Context(), authz.ReadFilter{})
		if err != nil {
			t.Error(err)
		}
		held <- len(got)
	}})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case got := <-held:
		if got != n {
			t.Errorf("restored with %d of %d tuples in OpenFGA", got, n)
		}
	case <-time.After(time.Minute):
		t.Fatal("not restored within a minute")
	}
	w.Kick()
	testkit.Eventually(t.Context(), t, func() (bool, error) {
		p, err := st.Outbox.Pending(t.Context(), 1)
		return len(p) == 0, err
	}, "outbox drained")
	select {
	case <-held:
		t.Error("Restored called twice")
	default:
	}
}
