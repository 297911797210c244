package hub

import (
	"sync"
	"time"

	"github.com/droverhq/drover/authz"
)

// decisionTTL bounds how long a permission decision is reused. This hub
// replica drops every cached decision as soon as its outbox writes a tuple
// to OpenFGA, so grants and revocations made through it apply at once;
// one made through another replica applies within the TTL.
const decisionTTL = 2 * time.Second

// maxDecisions bounds the cache; when full it is emptied rather than
// tracking recency (a refill costs one Check per key).
const maxDecisions = 100_000

type decisionKey struct {
	user   string
	rel    authz.Relation
	object string
}

type decision struct {
	allowed bool
	expires time.Time
}

// decisionCache remembers recent Check answers, so a burst of requests on
// one model (status polls, a CLI session, a watch reconnect) pays for one
// OpenFGA round trip rather than one per request.
type decisionCache struct {
	now func() time.Time
	ttl time.Duration

	mu  sync.Mutex
	gen uint64 // bumped by clear: a Check begun before it must not be cached
	m   map[decisionKey]decision
}

func newDecisionCache(now func() time.Time, ttl time.Duration) *decisionCache {
	if now == nil {
		now = time.Now
	}
	return &decisionCache{now: now, ttl: ttl, m: map[decisionKey]decision{}}
}

func (c *decisionCache) get(k decisionKey) (allowed, hit bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.m[k]
	if !ok || c.now().After(d.expires) {
		return false, false
	}
	return d.allowed, true
}

func (c *decisionCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// put stores a decision unless the cache was cleared since the Check that
// produced it began (its answer may predate a tuple change).
func (c *decisionCache) put(k decisionKey, allowed bool, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if len(c.m) >= maxDecisions {
		c.m = map[decisionKey]decision{}
	}
	c.m[k] = decision{allowed: allowed, expires: c.now().Add(c.ttl)}
}

func (c *decisionCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.m = map[decisionKey]decision{}
}
