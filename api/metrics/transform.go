package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hooklane/hooklane/subscription/transform"
)

// Transform counts the transformation runs of deliveries (API.md §16) on
// this instance: runs by outcome, failures by kind, and their durations.
type Transform struct {
	runs     *prometheus.CounterVec
	failures *prometheus.CounterVec
	duration prometheus.Histogram
	kinds    map[transform.Kind]bool
}

// The outcome labels of hooklane_transform_runs_total.
const (
	transformOK        = "ok"
	transformCancelled = "cancelled"
	transformFailed    = "failed"
)

// NewTransform registers the transformation metrics on m and returns them.
// Call it once per Metrics (a second call panics on the duplicate
// registration). Every outcome and failure kind series exists from the
// start, at 0.
func (m *Metrics) NewTransform() *Transform {
	tr := &Transform{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "transform_runs_total",
			Help: "Transformation runs of deliveries, by outcome: ok (the request was built from the result), cancelled (the handler cancelled the delivery), failed (see transform_failures_total).",
		}, []string{"outcome"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "transform_failures_total",
			Help: "Failed transformation runs of deliveries, by kind: throw, timeout, invalid_result, too_large, memory, compile.",
		}, []string{"kind"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "transform_run_duration_seconds",
			Help:    "Time a delivery spent in its transformation: the wait for a runtime, the run and the checks of its result.",
			Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5},
		}),
		kinds: make(map[transform.Kind]bool),
	}
	for _, o := range []string{transformOK, transformCancelled, transformFailed} {
		tr.runs.WithLabelValues(o)
	}
	for _, k := range transform.Kinds() {
		tr.kinds[k] = true
		tr.failures.WithLabelValues(string(k))
	}
	m.reg.MustRegister(tr.runs, tr.failures, tr.duration)
	return tr
}

// ObserveRun counts one run: failure is its kind ("" for a run that did
// not fail; a kind outside transform.Kinds is counted as throw, so the
// label set stays closed), cancelled whether the handler cancelled the
// delivery, d how long it took. Its shape fits webhook.Config's
// OnTransformFunc once the fields are spread.
func (tr *Transform) ObserveRun(failure transform.Kind, cancelled bool, d time.Duration) {
	switch {
	case failure != "":
		if !tr.kinds[failure] {
			failure = transform.KindThrow
		}
		tr.runs.WithLabelValues(transformFailed).Inc()
		tr.failures.WithLabelValues(string(failure)).Inc()
	case cancelled:
		tr.runs.WithLabelValues(transformCancelled).Inc()
	default:
		tr.runs.WithLabelValues(transformOK).Inc()
	}
	tr.duration.Observe(max(d, 0).Seconds())
}
