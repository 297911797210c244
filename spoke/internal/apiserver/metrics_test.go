package apiserver

import (
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestMetricsSeriesPerRoute checks the cached series: one per route,
// method and code, labelled with chi's whole route pattern, "unmatched"
// without a route, and right for routes deeper than the cache key holds.
func TestMetricsSeriesPerRoute(t *testing.T) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "requests"}, []string{"route", "method", "code"}),
		latency:  prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "latency"}, []string{"route", "method"}),
	}
	route := func(parts ...string) *chi.Context {
		rctx := chi.NewRouteContext()
		rctx.RoutePatterns = parts
		return rctx
	}
	config := route("/v1/*", "/models/{model}/*", "/config")
	for range 3 {
		m.seriesFor(config, "PATCH", 200).requests.Inc()
	}
	m.seriesFor(config, "PATCH", 404).requests.Inc()
	m.seriesFor(route("/v1/*", "/models/{model}/*", "/status"), "GET", 200).requests.Inc()
	m.seriesFor(nil, "GET", 404).requests.Inc()
	m.seriesFor(route(), "GET", 404).requests.Inc()
	deep := route("/a/*", "/b/*", "/c/*", "/d/*", "/e")
	m.seriesFor(deep, "GET", 200).requests.Inc()
	m.seriesFor(deep, "GET", 200).requests.Inc()
	for _, tc := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"/v1/models/{model}/config", "PATCH", "200"}, 3},
		{[]string{"/v1/models/{model}/config", "PATCH", "404"}, 1},
		{[]string{"/v1/models/{model}/status", "GET", "200"}, 1},
		{[]string{"unmatched", "GET", "404"}, 2},
		{[]string{"/a/b/c/d/e", "GET", "200"}, 2},
	} {
		if got := testutil.ToFloat64(m.requests.WithLabelValues(tc.labels...)); got != tc.want {
			t.Errorf("requests{%s} = %v, want %v", strings.Join(tc.labels, ","), got, tc.want)
		}
	}
	if n := testutil.CollectAndCount(m.requests); n != 5 {
		t.Errorf("%d request series, want 5", n)
	}
	if m.seriesFor(config, "PATCH", 200) != m.seriesFor(config, "PATCH", 200) {
		t.Error("a route's series is not reused")
	}
	if m.seriesFor(config, "FOO1", 200) != m.seriesFor(config, "FOO2", 200) {
		t.Error("made-up methods get series of their own, want one labelled other")
	}
}
