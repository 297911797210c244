package spoke

import "github.com/prometheus/client_golang/prometheus"

// joinAudit counts node join tokens and admissions for Prometheus (the
// API server registers the counters); the matching log lines are written
// where the events happen (join.go). A controller has no audit log of its
// own: these and the logs are the audit trail of who joined it.
type joinAudit struct {
	created    prometheus.Counter
	admissions *prometheus.CounterVec
}

// Admission results, the values of the result label.
const (
	admissionAdmitted     = "admitted"
	admissionUnauthorized = "unauthorized" // forged, unknown or expired token
	admissionForbidden    = "forbidden"    // a used token
	admissionFailed       = "failed"       // the controller could not decide (no raft leader, ...)
)

func newJoinAudit() *joinAudit {
	a := &joinAudit{
		created: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "drover_join_tokens_created_total", Help: "Node join tokens this node created.",
		}),
		admissions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_node_admissions_total", Help: "Node admissions this node answered, by result.",
		}, []string{"result"}),
	}
	for _, r := range []string{admissionAdmitted, admissionUnauthorized, admissionForbidden, admissionFailed} {
		a.admissions.WithLabelValues(r)
	}
	return a
}

func (a *joinAudit) collectors() []prometheus.Collector {
	return []prometheus.Collector{a.created, a.admissions}
}
