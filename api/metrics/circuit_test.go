package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/api/metrics"
	"github.com/hooklane/hooklane/dispatch"
)

// countSeries returns how many series family name has.
func countSeries(t *testing.T, m *metrics.Metrics, name string) int {
	t.Helper()
	mfs, err := m.Registry().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return len(mf.GetMetric())
		}
	}
	return 0
}

func TestCircuitMetricsAreBounded(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var circuits []*dispatch.Circuit
	for i := range 120 {
		opened := now.Add(-time.Duration(120-i) * time.Minute)
		probe := now.Add(time.Minute)
		if i%4 == 0 {
			probe = now.Add(-time.Second) // due: shows HALF_OPEN
		}
		circuits = append(circuits, &dispatch.Circuit{
			SubscriptionID: fmt.Sprintf("sub-%03d", i), State: dispatch.CircuitOpen,
			OpenedAt: &opened, NextProbeAt: &probe,
		})
	}
	reads := 0
	m := metrics.New(metrics.Config{})
	cm := m.Circuits(func(_ context.Context, limit int) ([]*dispatch.Circuit, error) {
		reads++
		require.Equal(t, metrics.CircuitsScanMax, limit)
		return circuits, nil
	}, func() time.Time { return now })

	require.InDelta(t, 90, value(t, m, "hooklane_circuits", "state", "OPEN"), 0)
	require.InDelta(t, 30, value(t, m, "hooklane_circuits", "state", "HALF_OPEN"), 0)
	require.Equal(t, metrics.CircuitsListedMax, countSeries(t, m, "hooklane_circuit_open_seconds"), "per-circuit series are capped")
	require.InDelta(t, 120*60, value(t, m, "hooklane_circuit_open_seconds", "subscription_id", "sub-000"), 0, "the longest open are listed")
	require.Equal(t, 1, reads, "scrapes within 5 s share one read")

	for _, k := range []dispatch.CircuitEvent{
		dispatch.CircuitEventProbeStarted, dispatch.CircuitEventProbeStarted, dispatch.CircuitEventProbeFailed,
		dispatch.CircuitEventOpened, dispatch.CircuitEventClosed, dispatch.CircuitEventDisabled,
	} {
		cm.Observe(k)
	}
	cm.ObserveOperationalDrop()
	require.InDelta(t, 2, value(t, m, "hooklane_circuit_probes_total", "outcome", "started"), 0)
	require.InDelta(t, 1, value(t, m, "hooklane_circuit_probes_total", "outcome", "failed"), 0)
	require.InDelta(t, 0, value(t, m, "hooklane_circuit_probes_total", "outcome", "succeeded"), 0)
	require.InDelta(t, 1, value(t, m, "hooklane_circuit_transitions_total", "to", "open"), 0)
	require.InDelta(t, 1, value(t, m, "hooklane_subscriptions_disabled_total"), 0)
	require.InDelta(t, 1, value(t, m, "hooklane_operational_events_dropped_total"), 0)
}

func TestCircuitGaugesSkipAFailedRead(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Config{})
	m.Circuits(func(context.Context, int) ([]*dispatch.Circuit, error) { return nil, errors.New("store down") }, nil)
	require.Zero(t, countSeries(t, m, "hooklane_circuits"), "a gap, not a zero")
}
