package bench_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/cmd/hooklane/bench"
)

// TestCompare pairs only the figures both reports have, with the right
// direction of improvement, and prints them.
func TestCompare(t *testing.T) {
	t.Parallel()
	before := &bench.Report{
		Ceiling: []bench.CeilingResult{{Batch: 1, Connections: 8, RequestsPerSec: 50_000}},
		Ingest: []bench.IngestResult{
			{Batch: 1, Connections: 8, EventsPerSec: 3000, Cost: bench.Cost{CPUSeconds: 0.5}},
			{Batch: 100, Connections: 8, EventsPerSec: 9000},
		},
		Latency:      []bench.LatencyResult{{OfferedPerSec: 1000, P99Ms: 10}},
		PeakRSSBytes: 100 << 20,
	}
	after := &bench.Report{
		Ceiling:      []bench.CeilingResult{{Batch: 1, Connections: 8, RequestsPerSec: 50_000}},
		Ingest:       []bench.IngestResult{{Batch: 1, Connections: 8, EventsPerSec: 6000, Cost: bench.Cost{CPUSeconds: 0.25}}},
		Latency:      []bench.LatencyResult{{OfferedPerSec: 1000, P99Ms: 20}, {OfferedPerSec: 2000, P99Ms: 5}},
		PeakRSSBytes: 80 << 20,
	}
	cs := bench.Compare(before, after)
	byFig := map[string]bench.Comparison{}
	for _, c := range cs {
		byFig[c.Figure] = c
	}
	require.NotContains(t, byFig, "ingest batch=100 conns=8 events/s", "only in the before report")
	require.NotContains(t, byFig, "open loop 2000/s p99 ms", "only in the after report")
	ev := byFig["ingest batch=1 conns=8 events/s"]
	require.InDelta(t, 2.0, ev.Ratio(), 1e-9)
	require.True(t, ev.Better())
	require.True(t, byFig["ingest batch=1 conns=8 CPU s per 1k"].Better(), "less CPU is better")
	require.False(t, byFig["open loop 1000/s p99 ms"].Better(), "a higher p99 is worse")
	require.True(t, byFig["peak RSS MiB"].Better())
	var out strings.Builder
	require.NoError(t, bench.WriteComparison(&out, cs))
	require.Contains(t, out.String(), "worse")
	require.Contains(t, out.String(), "better")
}
