package credential

import (
	"errors"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/droverhq/drover/api"
)

// Limits bound failed authentications: per source address and per claimed
// name, a token bucket of Burst failures refilled by one every Every.
// MaxKeys bounds how many addresses (and, apart, names) are remembered.
type Limits struct {
	AddrBurst int
	AddrEvery time.Duration
	NameBurst int
	NameEvery time.Duration
	MaxKeys   int
}

// DefaultLimits let a person mistype a password many times, and an agent
// whose credential is a heartbeat old retry, while a guesser gets one try
// per second from an address and one per few seconds for a name.
var DefaultLimits = Limits{
	AddrBurst: 30, AddrEvery: time.Second,
	NameBurst: 10, NameEvery: 3 * time.Second,
	MaxKeys: 10000,
}

// maxNameKey bounds the part of a claimed name the limiter keeps: names
// come from strangers, and a longer one is charged with its prefix.
const maxNameKey = 128

// Limiter throttles failed authentications. Allow is asked before a
// credential is checked, Fail after a check failed: a source or a name
// whose failures used up its bucket is refused, whatever it presents,
// until the bucket refills.
type Limiter struct {
	now func() time.Time

	mu    sync.Mutex
	addrs buckets
	names buckets
}

type buckets struct {
	burst float64
	every time.Duration
	max   int
	m     map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// NewLimiter returns a limiter with lim (zero fields take DefaultLimits')
// on clock now.
func NewLimiter(lim Limits, now func() time.Time) *Limiter {
	d := DefaultLimits
	if lim.AddrBurst <= 0 || lim.AddrEvery <= 0 {
		lim.AddrBurst, lim.AddrEvery = d.AddrBurst, d.AddrEvery
	}
	if lim.NameBurst <= 0 || lim.NameEvery <= 0 {
		lim.NameBurst, lim.NameEvery = d.NameBurst, d.NameEvery
	}
	if lim.MaxKeys <= 0 {
		lim.MaxKeys = d.MaxKeys
	}
	if now == nil {
		now = time.Now
	}
	return &Limiter{
		now:   now,
		addrs: buckets{burst: float64(lim.AddrBurst), every: lim.AddrEvery, max: lim.MaxKeys, m: map[string]*bucket{}},
		names: buckets{burst: float64(lim.NameBurst), every: lim.NameEvery, max: lim.MaxKeys, m: map[string]*bucket{}},
	}
}

// ErrThrottled is the sentinel of the error Allow returns (errors.Is).
var ErrThrottled = errors.New("too many failed authentications")

// ThrottledError refuses a source or name over its limit; RetryAfter is
// when the next attempt may pass.
type ThrottledError struct{ RetryAfter time.Duration }

func (e *ThrottledError) Error() string { return ErrThrottled.Error() }

// Is makes errors.Is(err, ErrThrottled) match.
func (e *ThrottledError) Is(target error) bool { return target == ErrThrottled }

// Seconds is RetryAfter in whole seconds, at least one (the Retry-After
// header's unit).
func (e *ThrottledError) Seconds() int {
	return max(1, int(math.Ceil(e.RetryAfter.Seconds())))
}

// APIError is the answer: too-many (429), saying when to retry.
func (e *ThrottledError) APIError() *api.Error {
	s := e.Seconds()
	return &api.Error{Code: api.CodeTooMany,
		Message: "too many failed authentications from this address or for this name: retry in " + strconv.Itoa(s) + "s",
		Details: map[string]any{"retry_after_seconds": s}}
}

// Allow returns nil when addr and name may try a credential, or why not.
// An empty name is charged to no name's bucket (a hub token's issuer).
// Its result is a pointer, not an error, so that nil is nil.
func (l *Limiter) Allow(addr, name string) *ThrottledError {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	wait := l.addrs.wait(addr, now)
	if name != "" {
		wait = max(wait, l.names.wait(nameKey(name), now))
	}
	if wait > 0 {
		return &ThrottledError{RetryAfter: wait}
	}
	return nil
}

// Fail charges a failed authentication to addr and name.
func (l *Limiter) Fail(addr, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.addrs.take(addr, now)
	if name != "" {
		l.names.take(nameKey(name), now)
	}
}

// Len is how many addresses and names the limiter remembers.
func (l *Limiter) Len() (addrs, names int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.addrs.m), len(l.names.m)
}

func nameKey(name string) string {
	if len(name) > maxNameKey {
		name = name[:maxNameKey]
	}
	return name
}

// refill tops b up for the time since it was last seen.
func (bs *buckets) refill(b *bucket, now time.Time) {
	if el := now.Sub(b.at); el > 0 {
		b.tokens = min(bs.burst, b.tokens+float64(el)/float64(bs.every))
	}
	b.at = now
}

// wait is how long key must wait for a token (0: it has one).
func (bs *buckets) wait(key string, now time.Time) time.Duration {
	b, ok := bs.m[key]
	if !ok {
		return 0
	}
	bs.refill(b, now)
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(bs.every))
}

// take spends one of key's tokens, remembering key if new. A full map
// first forgets keys whose buckets refilled (they are as good as new),
// then, under a flood of new keys, any one: the limit per source still
// holds a flood of names back.
func (bs *buckets) take(key string, now time.Time) {
	b, ok := bs.m[key]
	if !ok {
		if len(bs.m) >= bs.max {
			bs.prune(now)
		}
		// Copied: the key is a slice of a request header.
		b = &bucket{tokens: bs.burst, at: now}
		bs.m[string([]byte(key))] = b
	}
	bs.refill(b, now)
	b.tokens = max(0, b.tokens-1)
}

func (bs *buckets) prune(now time.Time) {
	for k, b := range bs.m {
		if bs.refill(b, now); b.tokens >= bs.burst {
			delete(bs.m, k)
		}
	}
	// Down to nine tenths, so a flood sweeps once per many new keys.
	for k := range bs.m {
		if len(bs.m) < bs.max-bs.max/10 {
			break
		}
		delete(bs.m, k)
	}
}

// Refusal is the error to answer for err from an authentication: a
// ThrottledError becomes too-many and sets h's Retry-After; any other
// error is itself.
func Refusal(h http.Header, err error) error {
	var te *ThrottledError
	if errors.As(err, &te) {
		h.Set("Retry-After", strconv.Itoa(te.Seconds()))
		return te.APIError()
	}
	return err
}

// SourceAddr is the address a request came from (its RemoteAddr's
// host): what failures are charged to. Forwarding headers are not
// believed: anyone can send them.
func SourceAddr(remoteAddr string) string {
	if host, _, err := net.SplitHostPort(remoteAddr); err == nil {
		return host
	}
	return remoteAddr
}
