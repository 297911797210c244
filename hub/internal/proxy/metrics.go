package proxy

import "github.com/prometheus/client_golang/prometheus"

// Collectors are the proxy's Prometheus metrics.
func (s *Relay) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_taken_connections_total",
			Help: "Connections the hub took from net/http to serve remembered reads itself."},
			func() float64 { return float64(s.takeovers.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_handed_back_connections_total",
			Help: "Taken connections handed back to net/http for a request that was not a remembered read."},
			func() float64 { return float64(s.handbacks.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_status_revalidated_total",
			Help: "Model status reads answered with the hub's copy after the controller said it had not changed (304)."},
			func() float64 {
				return float64(s.statuses.counter(func(c *statusCache) int64 { return c.revalidated.Load() }))
			}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_status_kept_total",
			Help: "Model status answers the hub kept a copy of, to revalidate on the next read."},
			func() float64 {
				return float64(s.statuses.counter(func(c *statusCache) int64 { return c.kept.Load() }))
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "drover_hub_status_kept_bytes",
			Help: "Bytes of model status the hub keeps (--status-cache-size)."},
			func() float64 { return float64(s.statuses.counter((*statusCache).bytes)) }),
	}
}
