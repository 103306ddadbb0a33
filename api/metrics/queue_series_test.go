package metrics_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/api/metrics"
)

// TestQueueErrorSeriesStartAtZero checks that every queue operation's
// error series is exported before any error, at 0: a dashboard's or an
// alert's rate() over it then reads 0, not "no data".
func TestQueueErrorSeriesStartAtZero(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Config{})
	fams, err := m.Registry().Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "hooklane_queue_errors_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			require.Len(t, s.GetLabel(), 1)
			got[s.GetLabel()[0].GetValue()] = s.GetCounter().GetValue()
		}
	}
	require.Equal(t, map[string]float64{"send": 0, "receive": 0, "delete": 0}, got)
}
