package authn

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/droverhq/drover/hub/internal/reply"
	"github.com/droverhq/drover/hub/internal/store"
)

// Logins are the hub's unauthenticated work: each failed one writes an
// audit entry, and most ask the OIDC issuer. Per client address, the hub
// takes at most loginFailures.Burst failed logins at once, then one per
// loginFailures.Every, and as many starts of a login (device flow,
// dashboard) by loginStarts, and as many device-flow polls by devicePolls
// (five CLIs waiting at once at RFC 8628's 5 s interval); beyond, it answers 429 with Retry-After, and
// audits that once a minute per address and replica. The buckets are
// shared by the replicas through PostgreSQL (store.Throttle.Charge), so an
// address gets that budget from the hub, not from each replica; a replica
// that knows an address is out of tokens refuses it without asking its
// database or issuer.
var (
	loginFailures = store.ThrottleRate{Burst: 10, Every: 6 * time.Second}
	loginStarts   = store.ThrottleRate{Burst: 30, Every: 2 * time.Second}
	devicePolling = store.ThrottleRate{Burst: 30, Every: time.Second}
)

// ThrottleKept is how long a shared bucket is kept after its last charge:
// longer than any rate's burst takes to refill (a bucket owing a burst
// refills in twice that).
const ThrottleKept = 10 * time.Minute

// maxThrottled bounds the addresses a throttle tracks; past it, it starts
// over (letting everyone through) rather than grow without bound.
const maxThrottled = 100_000

// sharedBuckets keep the buckets every replica charges (the store).
type sharedBuckets interface {
	Charge(ctx context.Context, kind, addr string, r store.ThrottleRate, now time.Time) (float64, error)
	Tokens(ctx context.Context, kind, addr string, r store.ThrottleRate, now time.Time) (float64, error)
}

// throttle is a token bucket per client address: kept in memory, and, if
// shared is set, in the buckets every replica charges, which the memory
// follows whenever they hold less.
type throttle struct {
	kind   string
	rate   store.ThrottleRate
	now    func() time.Time
	shared sharedBuckets

	mu      sync.Mutex
	buckets map[netip.Addr]*bucket
}

type bucket struct {
	tokens  float64
	at      time.Time // when tokens was counted
	audited time.Time // when a refusal from this address was last audited
}

func newThrottle(kind string, rate store.ThrottleRate, now func() time.Time, shared sharedBuckets) *throttle {
	return &throttle{kind: kind, rate: rate, now: now, shared: shared, buckets: map[netip.Addr]*bucket{}}
}

// throttleKey is what a throttle counts by: an IPv4 address, or an IPv6
// address's /64 (one host's allocation: every address in it is the same
// client's to pick).
func throttleKey(a netip.Addr) netip.Addr {
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}

// refill brings b's tokens up to now.
func (t *throttle) refill(b *bucket, now time.Time) {
	b.tokens = min(t.rate.Burst, b.tokens+float64(now.Sub(b.at))/float64(t.rate.Every))
	b.at = now
}

// bucketLocked is key's bucket, refilled to now; a full one if it had
// none.
func (t *throttle) bucketLocked(key netip.Addr, now time.Time) *bucket {
	b := t.buckets[key]
	if b == nil {
		if len(t.buckets) >= maxThrottled {
			t.buckets = map[netip.Addr]*bucket{}
		}
		b = &bucket{tokens: t.rate.Burst, at: now}
		t.buckets[key] = b
	}
	t.refill(b, now)
	return b
}

// follow lowers key's bucket to what the shared one holds, if less.
func (t *throttle) follow(key netip.Addr, shared float64, now time.Time) float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.bucketLocked(key, now)
	b.tokens = min(b.tokens, shared)
	return b.tokens
}

// sharedCtx bounds a call to the shared buckets: a request that ends
// meanwhile still has its failure counted.
func sharedCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
}

// blocked reports whether addr has no token left, how long until it has
// one, and whether this refusal is the first in a minute (to be audited).
// Invalid addresses are never blocked. When the shared buckets cannot be
// read, the memory alone decides: the login itself then meets the same
// database.
func (t *throttle) blocked(ctx context.Context, addr netip.Addr) (retry time.Duration, audit, ok bool) {
	if !addr.IsValid() {
		return 0, false, false
	}
	key, now := throttleKey(addr), t.now()
	t.mu.Lock()
	tokens := t.rate.Burst
	if b := t.buckets[key]; b != nil {
		t.refill(b, now)
		tokens = b.tokens
	}
	t.mu.Unlock()
	if tokens >= 1 && t.shared != nil {
		sctx, cancel := sharedCtx(ctx)
		shared, err := t.shared.Tokens(sctx, t.kind, key.String(), t.rate, now)
		cancel()
		if err == nil && shared < tokens {
			tokens = t.follow(key, shared, now)
		}
	}
	if tokens >= 1 {
		return 0, false, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.bucketLocked(key, now)
	audit = now.Sub(b.audited) >= time.Minute
	if audit {
		b.audited = now
	}
	return time.Duration((1 - b.tokens) * float64(t.rate.Every)), audit, true
}

// charge takes one token from addr's bucket, and from the shared one.
func (t *throttle) charge(ctx context.Context, addr netip.Addr) {
	if !addr.IsValid() {
		return
	}
	key, now := throttleKey(addr), t.now()
	t.mu.Lock()
	b := t.bucketLocked(key, now)
	b.tokens = max(0, b.tokens-1)
	t.mu.Unlock()
	if t.shared != nil {
		sctx, cancel := sharedCtx(ctx)
		shared, err := t.shared.Charge(sctx, t.kind, key.String(), t.rate, now)
		cancel()
		if err == nil {
			t.follow(key, shared, now)
		}
	}
}

// prune forgets the addresses whose buckets are full again.
func (t *throttle) prune() {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	for a, b := range t.buckets {
		if t.refill(b, now); b.tokens >= t.rate.Burst && now.Sub(b.audited) >= time.Minute {
			delete(t.buckets, a)
		}
	}
}

// refuseThrottled answers 429 when r's client address is out of logins on
// th, auditing it once a minute per address as operation op (actor: whom
// the login named, if anyone), and reports whether it did. The answer is
// OAuth's shape, as the login routes answer.
func (s *Service) refuseThrottled(w http.ResponseWriter, r *http.Request, th *throttle, op, what, actor string) bool {
	addr := s.ClientAddr(r)
	retry, audit, blocked := th.blocked(r.Context(), addr)
	if !blocked {
		return false
	}
	secs := max(1, int((retry+time.Second-1)/time.Second))
	if audit {
		s.appendAudit(r, store.AuditEntry{Actor: actor, Operation: op, Method: r.Method, Path: r.URL.Path,
			Status: http.StatusTooManyRequests, Result: store.ResultDenied, Details: map[string]any{"throttled": what}})
	}
	s.throttledLogins.Add(1)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	reply.JSON(w, http.StatusTooManyRequests, &reply.OAuthError{Code: "temporarily_unavailable",
		Description: fmt.Sprintf("too many %s from %s: try again in %ds", what, addr, secs)})
	return true
}

// ClientAddr is the address r came from: its peer's, or, when the peer is
// one of the --trusted-proxy networks, the rightmost address in
// X-Forwarded-For that is not (what the trusted proxies saw). Audit
// entries record it, and logins are throttled by it.
func (s *Service) ClientAddr(r *http.Request) netip.Addr {
	return clientAddr(r.RemoteAddr, r.Header.Values("X-Forwarded-For"), s.cfg.TrustedProxies)
}

// RemoteAddr is what the audit log records as where r came from: the
// peer's address and port, or the client address the trusted proxies saw.
func (s *Service) RemoteAddr(r *http.Request) string {
	if len(s.cfg.TrustedProxies) > 0 {
		if a := s.ClientAddr(r); a != parseAddr(r.RemoteAddr) {
			return a.String()
		}
	}
	return r.RemoteAddr
}

func clientAddr(remote string, forwarded []string, trusted []netip.Prefix) netip.Addr {
	peer := parseAddr(remote)
	if !inAny(peer, trusted) {
		return peer
	}
	var hops []string
	for _, v := range forwarded {
		hops = append(hops, strings.Split(v, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a := parseAddr(strings.TrimSpace(hops[i]))
		if !a.IsValid() {
			break // not what a proxy writes: stop at the last hop known
		}
		peer = a
		if !inAny(a, trusted) {
			break
		}
	}
	return peer
}

// parseAddr reads "ip", "ip:port" or "[ip]:port"; invalid otherwise.
func parseAddr(s string) netip.Addr {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap()
	}
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	a, err := netip.ParseAddr(strings.Trim(s, "[]"))
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}

func inAny(a netip.Addr, nets []netip.Prefix) bool {
	if !a.IsValid() {
		return false
	}
	for _, n := range nets {
		if n.Contains(a) {
			return true
		}
	}
	return false
}

// auditLogin records a login attempt.
func (s *Service) auditLogin(r *http.Request, id store.Identity, op string, err error) {
	e := store.AuditEntry{IdentityID: id.ID, Actor: id.Name(), Org: id.Org, Operation: op, Method: r.Method,
		Path: r.URL.Path, Status: http.StatusOK, Result: store.ResultOK}
	if err != nil {
		e.Status, e.Result = http.StatusUnauthorized, store.ResultDenied
	}
	s.appendAudit(r, e)
}
