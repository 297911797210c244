package proxy

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/token"
)

// Long-lived proxied calls (websocket watches, followed log streams) run
// for hours on the access they were authorized with. They are tracked, and
// checked again whenever permissions change on any replica (the same
// notification that drops the caches): a call whose caller was disabled or
// removed, or no longer holds the access it rests on, is ended, as a new
// request would be refused. A call opened with a token of a session that
// ends (logout) is ended at once (EndSession).

// liveCalls is the set of long-lived calls in flight on this replica.
type liveCalls struct {
	mu    sync.Mutex
	calls map[*liveCall]struct{}
	kick  chan struct{}
	// per counts each identity's calls; max bounds it (negative: none).
	per map[string]int
	max int
}

type liveCall struct {
	p      authn.Principal
	rel    authz.Relation
	model  string
	cancel context.CancelFunc
}

func newLiveCalls(max int) *liveCalls {
	return &liveCalls{calls: map[*liveCall]struct{}{}, kick: make(chan struct{}, 1), per: map[string]int{}, max: max}
}

// LongLived reports whether a proxied call may outlive the access it was
// authorized with by far: a websocket upgrade or a followed stream.
func LongLived(r *http.Request) bool {
	return r.Header.Get("Upgrade") != "" ||
		(strings.Contains(r.URL.RawQuery, "follow") && r.URL.Query().Get("follow") == "true")
}

// track registers a long-lived call made by p with rel on model, and
// returns the request to forward, ended by cancelling its context, and
// the function that forgets it. The call also ends when the session token
// it was opened with expires, as a new request with that token would be
// refused: a client resumes it with a renewed token (api.Client's watch
// and log stream do), which a session ended by logout cannot get.
// An identity holding its maximum of them is refused another
// (api.CodeTooMany, 429).
func (l *liveCalls) track(r *http.Request, p authn.Principal, rel authz.Relation, model string) (*http.Request, func(), error) {
	id := p.Identity.ID
	l.mu.Lock()
	if l.max >= 0 && l.per[id] >= l.max {
		l.mu.Unlock()
		return nil, nil, api.Errorf(api.CodeTooMany, "%s holds %d watches and log follows open on this hub already, its most: "+
			"close some (a watch left open by a program that forgot it counts too)", p.Identity.Name(), l.max)
	}
	l.per[id]++
	l.mu.Unlock()
	var ctx context.Context
	var cancel context.CancelFunc
	if p.Expires.IsZero() {
		ctx, cancel = context.WithCancel(r.Context())
	} else { // refused from then on (token.Leeway: replicas' clocks)
		ctx, cancel = context.WithDeadline(r.Context(), p.Expires.Add(token.Leeway))
	}
	c := &liveCall{p: p, rel: rel, model: model, cancel: cancel}
	l.mu.Lock()
	l.calls[c] = struct{}{}
	l.mu.Unlock()
	return r.WithContext(ctx), func() {
		l.mu.Lock()
		delete(l.calls, c)
		if l.per[id]--; l.per[id] <= 0 {
			delete(l.per, id)
		}
		l.mu.Unlock()
		cancel()
	}, nil
}

// changed asks for the live calls to be checked again.
func (l *liveCalls) changed() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

func (l *liveCalls) snapshot() []*liveCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*liveCall, 0, len(l.calls))
	for c := range l.calls {
		out = append(out, c)
	}
	return out
}

// ofSession returns the live calls opened with a token of session sid.
func (l *liveCalls) ofSession(sid string) []*liveCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*liveCall
	for c := range l.calls {
		if c.p.SID == sid {
			out = append(out, c)
		}
	}
	return out
}

// FollowLive checks the live calls again after every permission change,
// until ctx ends.
func (s *Relay) FollowLive(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.live.kick:
			s.recheckLive(ctx)
		}
	}
}

// recheckLive ends the live calls whose caller is gone or disabled, whose
// session ended (logged out), or whose caller no longer holds the access
// the call rests on. Its cost does not grow with
// the calls but with what they rest on: one query reads which callers are
// still enabled, and each distinct (caller, access, model) is checked
// once, liveCheckers at a time. A check that fails (OpenFGA unreachable)
// leaves its calls running: they are checked at the next change.
func (s *Relay) recheckLive(ctx context.Context) {
	calls := s.live.snapshot()
	if len(calls) == 0 {
		return
	}
	ids, sids := map[string]bool{}, map[string]bool{}
	for _, c := range calls {
		ids[c.p.Identity.ID] = true
		if c.p.SID != "" {
			sids[c.p.SID] = true
		}
	}
	enabled, err := s.cfg.Enabled(ctx, slices.Collect(maps.Keys(ids)))
	if err != nil {
		s.cfg.Logger.Warn("live calls: cannot read their callers; checked at the next change", "err", err)
		return
	}
	sessions, err := s.cfg.SessionsLive(ctx, slices.Collect(maps.Keys(sids)))
	if err != nil {
		s.cfg.Logger.Warn("live calls: cannot read their sessions; checked at the next change", "err", err)
		return
	}
	for _, c := range calls {
		if c.p.SID != "" && !sessions[c.p.SID] {
			s.cfg.Logger.Info("ending a live call: its session ended", "user", c.p.Identity.Name(), "model", c.model)
			c.cancel() // cancelling again below, should its access be gone too, does nothing
		}
	}
	type need struct {
		p     authn.Principal
		rel   authz.Relation
		model string
	}
	type key struct{ user, rel, model string }
	needs := map[key]need{}
	for _, c := range calls {
		if enabled[c.p.Identity.ID] {
			needs[key{c.p.Object, string(c.rel), c.model}] = need{c.p, c.rel, c.model}
		}
	}
	var mu sync.Mutex
	holds := make(map[key]bool, len(needs)) // absent: the check failed
	sem := make(chan struct{}, liveCheckers)
	var wg sync.WaitGroup
	for k, n := range needs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ok, err := s.cfg.Check(ctx, n.p, n.rel, authz.ModelObject(n.model))
			if err != nil {
				return
			}
			mu.Lock()
			holds[k] = ok
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, c := range calls {
		ok, checked := enabled[c.p.Identity.ID], true
		if ok {
			ok, checked = holds[key{c.p.Object, string(c.rel), c.model}]
		}
		if checked && !ok {
			s.cfg.Logger.Info("ending a live call: its caller lost access", "user", c.p.Identity.Name(), "model", c.model)
			c.cancel()
		}
	}
}

// liveCheckers bounds the permission checks recheckLive runs at once.
const liveCheckers = 8
