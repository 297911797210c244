package hub_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/hub/internal/hubtest"
	"github.com/droverhq/drover/tests/testkit"
)

// TestIndexerLeaderLosesItsLock: the replica running the indexer holds a
// PostgreSQL advisory lock, which ends with its session (a PostgreSQL
// restart, pg_terminate_backend). It notices, stops, and competes for the
// lock again; leading on with the lock gone would let another replica take
// it and lead too: two subscriptions per controller, each writing the
// controller's health.
func TestIndexerLeaderLosesItsLock(t *testing.T) {
	one := newEnv(t)
	runIndexer(t, one)
	leading := func(e *env) func() (bool, error) {
		return func() (bool, error) { return e.metric("drover_hub_indexer_leader") == 1, nil }
	}
	testkit.EventuallyWithin(t, 30*time.Second, leading(one), "the first replica leading")
	two := one.replica()
	runIndexer(t, two)
	if two.metric("drover_hub_indexer_leader") != 0 {
		t.Fatal("two replicas lead at once")
	}

	// End the lock's session, as a restart of PostgreSQL does.
	u, err := url.Parse(one.cfg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	if err := hubtest.Postgres().Exec(t.Context(), "postgres", `SELECT pg_terminate_backend(l.pid) FROM pg_locks l
		JOIN pg_database d ON d.oid = l.database WHERE l.locktype = 'advisory' AND d.datname = $1`,
		strings.TrimPrefix(u.Path, "/")); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, 30*time.Second, leading(two), "the second replica leading once the lock is free")
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		return one.metric("drover_hub_indexer_leader") == 0, nil
	}, "the first replica no longer leading once its lock's session ended")
	// Stopped, it competes again, and does not take the lock from the leader.
	if n := one.metric("drover_hub_indexer_leader") + two.metric("drover_hub_indexer_leader"); n != 1 {
		t.Errorf("%v replicas leading", n)
	}
}
