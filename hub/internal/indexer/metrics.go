package indexer

import "github.com/prometheus/client_golang/prometheus"

// Collectors are the indexer's Prometheus metrics, read from its counters.
func (ix *Indexer) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_index_writes_slowed_total",
			Help: "Index writes of a controller's events that waited for its write rate (--index-write-rate)."},
			func() float64 { return float64(ix.slowed.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_models_not_adopted_total",
			Help: "Models a controller listed that the index did not adopt: the controller held as many as the hub indexes for one (--max-controller-models)."},
			func() float64 { return float64(ix.unadopted.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_index_resyncs_total",
			Help: "Controllers' resets (every model, whole) the indexer applied: on subscribing anew, and every hour."},
			func() float64 { return float64(ix.resyncs.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_index_drift_repaired_total",
			Help: "Models whose index row a controller's reset found wrong at the index the hub had reached, and repaired."},
			func() float64 { return float64(ix.drifted.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "drover_hub_indexer_leader",
			Help: "1 while this replica runs the model indexer (holds its PostgreSQL advisory lock), else 0."},
			func() float64 {
				if ix.leading.Load() {
					return 1
				}
				return 0
			}),
	}
}
