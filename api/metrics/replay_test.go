package metrics_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/api/metrics"
)

func TestReplayCounters(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Config{})
	r := m.NewReplay()
	r.ObservePage(500, 120)
	r.ObservePage(30, 0)
	families, err := m.Registry().Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, f := range families {
		for _, s := range f.GetMetric() {
			if c := s.GetCounter(); c != nil {
				parts := []string{f.GetName()}
				for _, l := range s.GetLabel() {
					parts = append(parts, l.GetName()+"="+l.GetValue())
				}
				got[strings.Join(parts, ",")] = c.GetValue()
			}
		}
	}
	require.InDelta(t, 530, got["hooklane_replay_events_scanned_total"], 0)
	require.InDelta(t, 120, got["hooklane_replay_jobs_created_total"], 0)
	require.InDelta(t, 120, got["hooklane_dispatch_jobs_created_total,kind=EVENT"], 0)
}
