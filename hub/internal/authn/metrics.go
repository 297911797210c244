package authn

import "github.com/prometheus/client_golang/prometheus"

// Collectors are authn's Prometheus metrics.
func (s *Service) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_logins_throttled_total",
			Help: "Logins refused 429 because their client address had too many failed logins, or started too many."},
			func() float64 { return float64(s.throttledLogins.Load()) }),
	}
}
