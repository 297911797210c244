package store_test

import (
	"errors"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/tests/testkit"
)

// TestListenerNoticesADeadConnection: the permission-change listener,
// quiet for a while, checks that its connection still answers (and goes
// on listening when it does); when its connection died without a word it
// returns, so that the hub listens again, where it used to wait on it for
// good and miss every change.
func TestListenerNoticesADeadConnection(t *testing.T) {
	store.SetListenPing(t, 300*time.Millisecond)
	_, dsn := newStore(t)
	u, _ := url.Parse(dsn)
	p := testkit.NewFaultProxy(t, "unix", filepath.Join(u.Query().Get("host"), ".s.PGSQL.5432"))
	s, err := store.Open(t.Context(), p.DSNThrough(t, dsn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)

	listening, changes, ended := make(chan struct{}), make(chan struct{}, 16), make(chan error, 1)
	go func() {
		ended <- s.ListenAuthzChanges(t.Context(), func() { close(listening) }, func(store.Change) { changes <- struct{}{} })
	}()
	<-listening
	pings := store.ListenPings()
	testkit.EventuallyWithin(t, 10*time.Second, func() (bool, error) { return store.ListenPings() >= pings+2, nil },
		"the quiet listener checked its connection twice")
	if err := s.Outbox.MarkDelivered(t.Context(), nil, time.Now()); err != nil { // announces a change
		t.Fatal(err)
	}
	select {
	case <-changes:
	case err := <-ended:
		t.Fatalf("the listener ended after its checks: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no change heard after the checks")
	}

	p.Cut()
	select {
	case err := <-ended:
		if err == nil || errors.Is(err, t.Context().Err()) {
			t.Fatalf("the listener ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the listener still waits on a dead connection")
	}
}
