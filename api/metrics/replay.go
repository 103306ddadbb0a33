package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hooklane/hooklane/dispatch"
)

// Replay counts the work of replays (API.md §13) on this instance.
type Replay struct {
	m       *Metrics
	scanned prometheus.Counter
	created prometheus.Counter
}

// NewReplay registers the replay counters on m and returns them. Call it
// once per Metrics (a second call panics on the duplicate registration).
func (m *Metrics) NewReplay() *Replay {
	r := &Replay{
		m: m,
		scanned: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: Namespace, Name: "replay_events_scanned_total",
			Help: "Stored events read by replays on this instance.",
		}),
		created: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: Namespace, Name: "replay_jobs_created_total",
			Help: "Dispatch jobs created by replays on this instance (also counted in dispatch_jobs_created_total, kind EVENT).",
		}),
	}
	m.reg.MustRegister(r.scanned, r.created)
	return r
}

// ObservePage counts one replay page: events scanned and jobs created. It
// is a replay.WorkerConfig.OnPageFunc.
func (r *Replay) ObservePage(scanned, created int) {
	r.scanned.Add(float64(scanned))
	r.created.Add(float64(created))
	if created > 0 {
		r.m.jobsCreated.WithLabelValues(string(dispatch.KindEvent)).Add(float64(created))
	}
}
