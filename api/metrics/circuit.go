package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hooklane/hooklane/dispatch"
)

// The endpoint health metrics (API.md §12). Their labels stay bounded:
//   - hooklane_circuits{state} counts the circuits that are OPEN or
//     HALF_OPEN (read from the store at scrape, at most CircuitsScanMax of
//     them; CLOSED is every other push subscription);
//   - hooklane_circuit_open_seconds{subscription_id} is how long each open
//     circuit has been open, for the CircuitsListedMax longest open only, so
//     a thousand failing endpoints add at most that many series;
//   - the counters have outcome or state words as labels.

// Bounds of the per-circuit series.
const (
	// CircuitsScanMax is the most non-closed circuits one scrape reads.
	CircuitsScanMax = 1000
	// CircuitsListedMax is the most circuits with a series of their own.
	CircuitsListedMax = 50
	// circuitsCacheTTL is how long one read of the circuits serves scrapes.
	circuitsCacheTTL = 5 * time.Second
	// circuitsReadTimeout bounds that read.
	circuitsReadTimeout = 2 * time.Second
)

// CircuitsFunc returns up to limit circuits that are not CLOSED, longest
// open first (dispatch.CircuitStore.CircuitListNotClosed).
type CircuitsFunc func(ctx context.Context, limit int) ([]*dispatch.Circuit, error)

// CircuitMetrics are the counters of circuit transitions, probes and
// disables, fed by dispatch.LifecycleConfig.OnCircuitFunc, and the gauges
// of the circuits that are not closed.
type CircuitMetrics struct {
	probes      *prometheus.CounterVec
	transitions *prometheus.CounterVec
	disabled    prometheus.Counter
	dropped     prometheus.Counter
}

// Circuits registers the endpoint health metrics on m's registry and
// returns them; list is read at scrape time (cached for 5 s). Call it once.
func (m *Metrics) Circuits(list CircuitsFunc, nowFunc func() time.Time) *CircuitMetrics {
	if nowFunc == nil {
		nowFunc = time.Now
	}
	c := &CircuitMetrics{
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "circuit_probes_total",
			Help: "Probes of half-open circuits, by outcome: started, succeeded, failed.",
		}, []string{"outcome"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "circuit_transitions_total",
			Help: "Circuits that opened (also after a failed probe) or closed.",
		}, []string{"to"}),
		disabled: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: Namespace, Name: "subscriptions_disabled_total",
			Help: "Subscriptions the gateway paused after HOOKLANE_AUTO_DISABLE_AFTER of failures.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: Namespace, Name: "operational_events_dropped_total",
			Help: "Operational events dropped because their ingest fell behind.",
		}),
	}
	for _, o := range []string{"started", "succeeded", "failed"} {
		c.probes.WithLabelValues(o)
	}
	for _, s := range []string{"open", "closed"} {
		c.transitions.WithLabelValues(s)
	}
	m.reg.MustRegister(c.probes, c.transitions, c.disabled, c.dropped,
		&circuitCollector{
			list: list, now: nowFunc,
			states: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "circuits"),
				"Circuits not CLOSED, by state (at most 1,000 counted).", []string{"state"}, nil),
			open: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "circuit_open_seconds"),
				"How long a circuit has been open, for the 50 longest open.", []string{"subscription_id"}, nil),
		})
	return c
}

// Observe counts one dispatch.CircuitEvent.
func (c *CircuitMetrics) Observe(ev dispatch.CircuitEvent) {
	switch ev {
	case dispatch.CircuitEventProbeStarted:
		c.probes.WithLabelValues("started").Inc()
	case dispatch.CircuitEventProbeSucceeded:
		c.probes.WithLabelValues("succeeded").Inc()
	case dispatch.CircuitEventProbeFailed:
		c.probes.WithLabelValues("failed").Inc()
	case dispatch.CircuitEventOpened:
		c.transitions.WithLabelValues("open").Inc()
	case dispatch.CircuitEventClosed:
		c.transitions.WithLabelValues("closed").Inc()
	case dispatch.CircuitEventDisabled:
		c.disabled.Inc()
	}
}

// ObserveOperationalDrop counts an operational event dropped by a full
// buffer.
func (c *CircuitMetrics) ObserveOperationalDrop() { c.dropped.Inc() }

// circuitCollector reads the circuits not closed at scrape time.
type circuitCollector struct {
	list         CircuitsFunc
	now          func() time.Time
	states, open *prometheus.Desc

	mu     sync.Mutex
	at     time.Time
	cached []*dispatch.Circuit
}

// Describe sends the descriptors.
func (cc *circuitCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- cc.states
	ch <- cc.open
}

// Collect reads the circuits (or reuses a read of the last 5 s) and sends
// the gauges. A failed read sends nothing: a gap, not a zero.
func (cc *circuitCollector) Collect(ch chan<- prometheus.Metric) {
	circuits, ok := cc.read()
	if !ok {
		return
	}
	now := cc.now()
	counts := map[dispatch.CircuitState]int{dispatch.CircuitOpen: 0, dispatch.CircuitHalfOpen: 0}
	for _, c := range circuits {
		if s := c.Effective(now); s != dispatch.CircuitClosed {
			counts[s]++
		}
	}
	for s, n := range counts {
		ch <- prometheus.MustNewConstMetric(cc.states, prometheus.GaugeValue, float64(n), string(s))
	}
	for i, c := range circuits {
		if i == CircuitsListedMax {
			break
		}
		if c.OpenedAt != nil {
			ch <- prometheus.MustNewConstMetric(cc.open, prometheus.GaugeValue, now.Sub(*c.OpenedAt).Seconds(), c.SubscriptionID)
		}
	}
}

func (cc *circuitCollector) read() ([]*dispatch.Circuit, bool) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	now := cc.now()
	if !cc.at.IsZero() && now.Sub(cc.at) < circuitsCacheTTL {
		return cc.cached, true
	}
	ctx, cancel := context.WithTimeout(context.Background(), circuitsReadTimeout)
	defer cancel()
	circuits, err := cc.list(ctx, CircuitsScanMax)
	if err != nil {
		return nil, false
	}
	cc.cached, cc.at = circuits, now
	return circuits, true
}
