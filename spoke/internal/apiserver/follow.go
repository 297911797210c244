package apiserver

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/droverhq/drover/spoke/internal/reply"
	"github.com/droverhq/drover/spoke/internal/state/stream"
)

// follower drives one index-addressed stream (rule 5): a reset when the
// client has no usable index, then every batch of events after it,
// keepalives when idle, and a new reset whenever the subscription falls
// behind the broker's ring (a slow consumer never blocks the producer).
type follower struct {
	model string // "" follows every model
	reset func() (uint64, error)
	// events sends what of evs the stream carries, if anything, and says
	// whether it sent a frame.
	events    func(index uint64, evs []stream.Event) (sent bool, err error)
	keepalive func(index uint64) error
	// poll, when set, runs at once and then every pollEvery between
	// events: it reports what no event announces, and says whether it
	// sent a frame.
	poll      func(index uint64) (sent bool, err error)
	pollEvery time.Duration
}

// follow runs f from since. A keepalive goes out whenever the stream has
// sent nothing for its keepalive interval, however many events it read and
// left out meanwhile: a controller whose agents renew leases every few
// seconds changes no summary for minutes, and its client must still hear
// from it (a silent stream is a dead one to the hub's indexer).
func (s *base) follow(ctx context.Context, since uint64, f follower) error {
	var err error
	if since > 0 {
		ahead, err := s.beyondThisNode(ctx, since)
		if err != nil {
			return err
		}
		if ahead {
			since = 0
		}
	}
	if since == 0 {
		if since, err = f.reset(); err != nil {
			return err
		}
	}
	pollDue := time.Now()
	for {
		sub, err := s.b.Events().Subscribe(ctx, stream.SubscribeRequest{ModelUUID: f.model, Since: since})
		if err != nil {
			return err
		}
		due := time.Now().Add(s.keepaliveInterval())
		for {
			wake := due
			if f.poll != nil && pollDue.Before(wake) {
				wake = pollDue
			}
			nctx, ncancel := context.WithDeadline(ctx, wake)
			evs, err := sub.Next(nctx)
			ncancel()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, stream.ErrSubscriptionReset) {
				break // resubscribe after a reset
			}
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			if err := s.hubTrustEnded(ctx); err != nil {
				return err
			}
			if err == nil {
				for _, ev := range evs {
					since = max(since, ev.Index)
				}
				sent, err := f.events(since, evs)
				if err != nil {
					return err
				}
				if sent {
					due = time.Now().Add(s.keepaliveInterval())
				}
			}
			if f.poll != nil && !time.Now().Before(pollDue) {
				sent, err := f.poll(since)
				if err != nil {
					return err
				}
				if sent {
					due = time.Now().Add(s.keepaliveInterval())
				}
				pollDue = time.Now().Add(f.pollEvery)
			}
			if !time.Now().Before(due) {
				if err := f.keepalive(since); err != nil {
					return err
				}
				due = time.Now().Add(s.keepaliveInterval())
			}
		}
		if since, err = f.reset(); err != nil {
			return err
		}
	}
}

// HealthInterval is how often the hub's event stream checks the
// controller's nodes for a change (Config.HealthInterval overrides it).
const HealthInterval = 5 * time.Second

func (s *base) healthInterval() time.Duration {
	if s.cfg.HealthInterval > 0 {
		return s.cfg.HealthInterval
	}
	return HealthInterval
}

func (s *base) keepaliveInterval() time.Duration {
	if s.cfg.KeepaliveInterval > 0 {
		return s.cfg.KeepaliveInterval
	}
	return KeepaliveInterval
}

// beyondThisNode says whether since is past every change this node has
// applied, even after waiting s.cfg.CatchUpWait for it. The client's index then
// comes from another history: the controller's state was restored from a
// backup, or rebuilt with the same UUID, and its indexes went back. Its
// events up to since would otherwise be left out for good, since the
// stream sends only those after since, so the stream starts with a reset.
// A node merely behind the one the client followed catches up first.
func (s *base) beyondThisNode(ctx context.Context, since uint64) (bool, error) {
	latest, err := s.b.Store().Snapshot().LatestIndex()
	if err != nil || since <= latest {
		return false, err
	}
	// Events published after latest are still in the ring.
	sub, err := s.b.Events().Subscribe(ctx, stream.SubscribeRequest{Since: latest})
	if err != nil {
		return false, err
	}
	wctx, cancel := context.WithTimeout(ctx, s.cfg.CatchUpWait)
	defer cancel()
	for {
		if _, err := sub.Next(wctx); err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			return true, nil // still behind, or the ring was reset
		}
		if sub.Index() >= since {
			return false, nil
		}
	}
}

// since reads a stream's ?since=, the index the caller resumes after: 0
// (start with a reset) when it is from another history (otherHistory).
// A bad one is answered, and false returned.
func (s *base) since(w http.ResponseWriter, r *http.Request) (uint64, bool) {
	since, err := reply.UintParam(r, "since", "want a raft index")
	if err != nil {
		reply.WriteError(w, r, err)
		return 0, false
	}
	if s.otherHistory(r, since) {
		since = 0
	}
	return since, true
}

// otherHistory reports whether r's position (since, and its mark) is from
// another history than this controller's: the controller was restored from
// an older copy and went past since again, so the entry its log holds
// there is another one. Such a stream starts with a reset. Without a mark
// (an older client), or where the entry is compacted out of the log, it cannot
// tell.
func (s *base) otherHistory(r *http.Request, since uint64) bool {
	m, ok := s.b.LogMark(since)
	return ok && r.URL.Query().Has("mark") && m != r.URL.Query().Get("mark")
}

// mark names the log entry at index in its history, "" when the log no
// longer holds it.
func (s *base) mark(index uint64) string {
	if m, ok := s.marks.get(index); ok {
		return m
	}
	m, ok := s.b.LogMark(index)
	if ok {
		s.marks.put(index, m)
	}
	return m
}

// markCache holds the marks of the last few log entries asked for.
type markCache struct {
	mu    sync.Mutex
	index [16]uint64
	mark  [16]string
	next  int
}

func (c *markCache) get(index uint64) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, idx := range c.index {
		if idx == index && idx != 0 {
			return c.mark[i], true
		}
	}
	return "", false
}

func (c *markCache) put(index uint64, mark string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.index[c.next], c.mark[c.next] = index, mark
	c.next = (c.next + 1) % len(c.index)
}
