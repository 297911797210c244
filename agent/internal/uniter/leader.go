package uniter

import (
	"context"
	"sync"
	"time"

	"github.com/droverhq/drover/api"
)

// Leadership lease timings (CHARM-CONTRACT §6.1): a 60 s claim renewed
// every 30 s, so a true is-leader is good for at least 30 s.
const (
	LeaseDuration   = 60 * time.Second
	RenewInterval   = 30 * time.Second
	LeaderGuarantee = 30 * time.Second
	// claimRetry bounds how long a non-leader waits before claiming again
	// (the holder's lease may be released early, e.g. when it is removed).
	claimRetry = 5 * time.Second
)

// tracker claims and renews the unit's leadership lease.
type tracker struct {
	unit  string
	call  func(ctx context.Context, method string, params, out any) error
	now   func() time.Time
	wake  func() // tell the uniter leadership may have changed
	dying func() bool

	mu     sync.Mutex
	known  bool
	leader bool
	expiry time.Time
}

func newTracker(unit string, call func(context.Context, string, any, any) error, now func() time.Time, wake func(), dying func() bool) *tracker {
	return &tracker{unit: unit, call: call, now: now, wake: wake, dying: dying}
}

// state reports (known, leader) as of now: a lease past its expiry is
// not leadership.
func (t *tracker) state() (bool, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.known, t.leader && t.now().Before(t.expiry)
}

// claim asks the controller once and records the answer.
func (t *tracker) claim(ctx context.Context) (api.AgentLeaderResult, error) {
	var res api.AgentLeaderResult
	err := t.call(ctx, api.AgentClaimLeader, api.AgentLeaderParams{Unit: t.unit, Duration: LeaseDuration}, &res)
	if err != nil {
		return res, err
	}
	t.mu.Lock()
	changed := !t.known || t.leader != res.Leader
	t.known, t.leader, t.expiry = true, res.Leader, res.Expiry
	if !res.Leader {
		t.expiry = time.Time{}
	}
	t.mu.Unlock()
	if changed {
		t.wake()
	}
	return res, nil
}

// isLeader answers is-leader: a lease with less than the guarantee left
// is renewed first.
func (t *tracker) isLeader(ctx context.Context) (bool, error) {
	t.mu.Lock()
	ok := t.leader && t.expiry.Sub(t.now()) > LeaderGuarantee
	t.mu.Unlock()
	if ok {
		return true, nil
	}
	res, err := t.claim(ctx)
	if err != nil {
		return false, err
	}
	return res.Leader, nil
}

// run claims until ctx ends: a leader renews every RenewInterval, a
// non-leader claims again when the holder's lease expires (or sooner).
func (t *tracker) run(ctx context.Context) error {
	for {
		var wait time.Duration
		if t.dying() {
			if known, leader := t.state(); known && !leader {
				wait = time.Minute // a dying unit does not seek leadership
			}
		}
		if wait == 0 {
			res, err := t.claim(ctx)
			switch {
			case err != nil:
				wait = time.Second
			case res.Leader:
				wait = RenewInterval
			default:
				wait = min(max(res.Expiry.Sub(t.now())+50*time.Millisecond, 200*time.Millisecond), claimRetry)
			}
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C:
		}
		timer.Stop()
	}
}
