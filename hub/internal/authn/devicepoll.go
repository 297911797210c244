package authn

import (
	"crypto/sha256"
	"sync"
	"time"
)

// devicePolls remember when each device code was last passed on to the
// issuer, so that a poll sooner than the code's interval is answered
// slow_down (RFC 8628 3.5) without asking the issuer. Each replica counts
// its own; the issuer enforces the interval across them.
type devicePolls struct {
	mu    sync.Mutex
	polls map[[32]byte]devicePoll
}

type devicePoll struct {
	last     time.Time // when a poll was last passed on
	interval time.Duration
	expires  time.Time // when the code is surely dead
}

const (
	// defaultPollInterval is RFC 8628's, for a code started elsewhere.
	defaultPollInterval = 5 * time.Second
	// pollSlack forgives a client's timer firing a little early.
	pollSlack = 500 * time.Millisecond
	// deviceCodeKept outlives any issuer's device code.
	deviceCodeKept = 30 * time.Minute
	// maxDevicePolls bounds the codes remembered; past it the memory
	// starts over (the issuer still enforces the interval).
	maxDevicePolls = 100_000
)

func newDevicePolls() *devicePolls { return &devicePolls{polls: map[[32]byte]devicePoll{}} }

// started records a code the issuer handed out with its interval.
func (d *devicePolls) started(code string, interval time.Duration, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.putLocked(sha256.Sum256([]byte(code)), devicePoll{interval: interval, expires: now.Add(deviceCodeKept)})
}

// early reports whether a poll of code at now comes sooner than its
// interval after the last one passed on; otherwise the poll counts as
// passed on.
func (d *devicePolls) early(code string, now time.Time) bool {
	k := sha256.Sum256([]byte(code))
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := d.polls[k]
	if !ok {
		p = devicePoll{interval: defaultPollInterval, expires: now.Add(deviceCodeKept)}
	}
	if !p.last.IsZero() && now.Sub(p.last) < p.interval-pollSlack {
		return true
	}
	p.last = now
	d.putLocked(k, p)
	return false
}

func (d *devicePolls) putLocked(k [32]byte, p devicePoll) {
	if _, ok := d.polls[k]; !ok && len(d.polls) >= maxDevicePolls {
		d.polls = map[[32]byte]devicePoll{}
	}
	d.polls[k] = p
}

// prune forgets the codes past their expiry.
func (d *devicePolls) prune(now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, p := range d.polls {
		if now.After(p.expires) {
			delete(d.polls, k)
		}
	}
}
