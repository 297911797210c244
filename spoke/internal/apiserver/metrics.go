package apiserver

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/droverhq/drover/internal/corkconn"
)

type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	// series caches each (route, method, code)'s counter and histogram:
	// building the route label and finding the series by label values
	// cost several allocations and hashes per request.
	series sync.Map // seriesKey -> *routeSeries
}

// seriesKey identifies a route by chi's pattern parts (one per router it
// crossed), so the joined pattern is built once per route.
type seriesKey struct {
	parts  [maxPatternParts]string
	method string
	code   int
}

const maxPatternParts = 4

type routeSeries struct {
	requests prometheus.Counter
	latency  prometheus.Observer
}

// methodLabel is method when it is one HTTP defines, else "other": the
// method is the client's to choose, and each label value is a series kept
// for the life of the process.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return method
	}
	return "other"
}

// seriesFor returns the series of a request that ran through rctx's
// routes (nil: no route matched) with method and answered code. Labels
// are the route's pattern (never the path), a known method or "other",
// and the code this server answered: a bounded set whatever clients send.
func (m *metrics) seriesFor(rctx *chi.Context, method string, code int) *routeSeries {
	method = methodLabel(method)
	var parts []string
	if rctx != nil {
		parts = rctx.RoutePatterns
	}
	if len(parts) > maxPatternParts {
		return m.newSeries(rctx, method, code) // deeper than any route of ours; not cached
	}
	k := seriesKey{method: method, code: code}
	copy(k.parts[:], parts)
	if v, ok := m.series.Load(k); ok {
		return v.(*routeSeries)
	}
	v, _ := m.series.LoadOrStore(k, m.newSeries(rctx, method, code))
	return v.(*routeSeries)
}

func (m *metrics) newSeries(rctx *chi.Context, method string, code int) *routeSeries {
	route := rctx.RoutePattern()
	if route == "" {
		route = "unmatched"
	}
	return &routeSeries{
		requests: m.requests.WithLabelValues(route, method, strconv.Itoa(code)),
		latency:  m.latency.WithLabelValues(route, method),
	}
}

func newMetrics(reg *prometheus.Registry, b Backend) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_api_requests_total", Help: "API requests by route, method and status code.",
		}, []string{"route", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "drover_api_request_duration_seconds", Help: "API request latency by route and method.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"route", "method"}),
	}
	reg.MustRegister(m.requests, m.latency,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "drover_raft_leader", Help: "1 if this node is the raft leader.",
		}, func() float64 {
			if b.IsLeader() {
				return 1
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "drover_state_index", Help: "Latest raft index applied to the model store.",
		}, func() float64 {
			idx, _ := b.Store().Snapshot().LatestIndex()
			return float64(idx)
		}),
	)
	return m
}

type statusRecorder struct {
	http.ResponseWriter
	code int
	conn *corkconn.Conn // the request's corkable connection, if any
}

// CorkConn is the request's corkable connection, if any (reply.Corked).
func (r *statusRecorder) CorkConn() *corkconn.Conn { return r.conn }

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController and the websocket upgrader reach the
// underlying writer.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Hijack is for gorilla/websocket, which asserts http.Hijacker directly
// rather than going through Unwrap.
func (r *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := r.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("response writer cannot be hijacked")
	}
	r.code = http.StatusSwitchingProtocols
	return h.Hijack()
}

// Flush streams a response (debug-log follow).
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

var nosniff = []string{"nosniff"}

func (s *Server) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		// No answer here is a page: browsers must not take one for one
		// (the hub relays answers on its own origin, and requires this).
		w.Header()["X-Content-Type-Options"] = nosniff
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK, conn: corkconn.FromContext(r.Context(), r.ProtoMajor)}
		next.ServeHTTP(rec, r)
		series := s.metrics.seriesFor(chi.RouteContext(r.Context()), r.Method, rec.code)
		series.requests.Inc()
		series.latency.Observe(time.Since(start).Seconds())
		if rec.code >= 500 && rec.code != http.StatusServiceUnavailable {
			s.log.Warn("request failed", "method", r.Method, "path", r.URL.Path, "code", rec.code, "duration", time.Since(start))
		}
	})
}
