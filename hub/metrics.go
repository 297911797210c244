package hub

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// statusClasses are the "code" label's values, by status / 100.
var statusClasses = [10]string{"0xx", "1xx", "2xx", "3xx", "4xx", "5xx", "6xx", "7xx", "8xx", "9xx"}

// requestCounters counts HTTP requests by route pattern and status class.
// Each route's counters are looked up once and kept, so counting a request
// is an atomic add, not a hash of its labels (it is on every proxied call).
type requestCounters struct {
	vec    *prometheus.CounterVec
	routes sync.Map // route pattern -> *[10]atomic.Pointer[prometheus.Counter]
}

func newRequestCounters() *requestCounters {
	return &requestCounters{vec: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drover_hub_http_requests_total",
		Help: "HTTP requests by route pattern and status class."}, []string{"route", "code"})}
}

// inc counts one request to route answered with status (0: nothing was
// written, counted as 200 as net/http answers).
func (rc *requestCounters) inc(route string, status int) {
	class := min(max(status, 200)/100, len(statusClasses)-1)
	v, ok := rc.routes.Load(route)
	if !ok {
		v, _ = rc.routes.LoadOrStore(route, new([10]atomic.Pointer[prometheus.Counter]))
	}
	slot := &v.(*[10]atomic.Pointer[prometheus.Counter])[class]
	c := slot.Load()
	if c == nil {
		cnt := rc.vec.WithLabelValues(route, statusClasses[class])
		c = &cnt
		slot.Store(c)
	}
	(*c).Inc()
}

// Dependencies the hub answers 503 without (the "dependency" label).
const (
	depPostgres = "postgres"
	depOpenFGA  = "openfga"
	depOIDC     = "oidc"
)

// outageCounters count what an operator alerts on: requests answered 503
// for want of a dependency, and audit entries the hub could not finish
// (left pending).
type outageCounters struct {
	unavailable *prometheus.CounterVec
	unfinished  prometheus.Counter
}

func newOutageCounters() *outageCounters {
	o := &outageCounters{
		unavailable: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drover_hub_dependency_unavailable_total",
			Help: "Requests answered 503 because a dependency (postgres, openfga, oidc) could not be used."}, []string{"dependency"}),
		unfinished: prometheus.NewCounter(prometheus.CounterOpts{Name: "drover_hub_audit_entries_unfinished_total",
			Help: "Audit entries left pending: the request was served, its result could not be recorded."}),
	}
	for _, d := range []string{depPostgres, depOpenFGA, depOIDC} {
		o.unavailable.WithLabelValues(d) // exported at 0 from the start
	}
	return o
}
