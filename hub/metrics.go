package hub

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
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

// collectors are every metric the hub registers: its own, read from the
// counters of the parts they count, and those of authn, the proxy and the
// indexer.
func (s *Server) collectors() []prometheus.Collector {
	cs := []prometheus.Collector{s.reqs.vec, s.outages.unavailable, s.outages.unfinished,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_listed_models_cached_total",
			Help: "Models in GET /v1/models answers whose JSON was kept from an earlier listing (the row unchanged)."},
			func() float64 { return float64(s.modelJSON.hits.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_authz_tuples_delivered_total",
			Help: "Outbox entries this replica delivered to OpenFGA."},
			func() float64 { return float64(s.outbox.Stats().Delivered.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_authz_delivery_failures_total",
			Help: "Outbox deliveries OpenFGA refused or did not answer (retried)."},
			func() float64 { return float64(s.outbox.Stats().Failed.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_authz_drift_repaired_total",
			Help: "Tuples the reconciler found OpenFGA lacking or holding in excess, and queued to repair."},
			func() float64 { return float64(s.outbox.Stats().Repaired.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "drover_hub_authz_outbox_undelivered",
			Help: "Outbox entries not yet in OpenFGA: how far permissions lag the database (-1: the database did not answer)."},
			func() float64 {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				n, err := s.store.Outbox.Undelivered(ctx)
				if err != nil {
					return -1
				}
				return float64(n)
			}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_authz_caches_dropped_total",
			Help: "Times this replica dropped every cached token, permission decision and remembered route (a permission changed on some replica)."},
			func() float64 { return float64(s.cachesDropped.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_sessions_ended_total",
			Help: "Sessions ended on some replica (logout) of which this replica dropped the cached tokens, routes and long-lived calls, and nothing else."},
			func() float64 { return float64(s.sessionsEnded.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_listed_models_read_total",
			Help: "Models in GET /v1/models answers read whole from PostgreSQL (new or changed since they were last listed)."},
			func() float64 { return float64(s.modelJSON.misses.Load()) }),
	}
	cs = append(cs, s.authn.Collectors()...)
	cs = append(cs, s.proxy.Collectors()...)
	return append(cs, s.indexer.Collectors()...)
}
