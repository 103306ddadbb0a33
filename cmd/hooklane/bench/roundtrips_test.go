package bench

import (
	"bytes"
	"maps"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRoundTripsPerDeliveredEvent(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	counts := map[string]int64{"mongo:find": 5}
	r := &runner{cfg: Config{RoundTrips: func() map[string]int64 {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(counts)
	}}}
	before := r.sampleCost()
	mu.Lock()
	counts["mongo:find"] += 40
	counts["mongo:insert"] = 20
	counts["sqs:ReceiveMessage"] = 3
	mu.Unlock()
	cost := r.costSince(t.Context(), before).per1k(10)
	require.Equal(t, map[string]float64{"mongo:find": 4, "mongo:insert": 2, "sqs:ReceiveMessage": 0.3}, cost.RoundTrips)
	require.Equal(t, map[string]float64{"mongo": 6, "sqs": 0.3}, cost.RoundTripTotals())

	rep := &Report{Ingest: []IngestResult{{Batch: 1, Connections: 8, Cost: cost}}}
	var table bytes.Buffer
	require.NoError(t, rep.WriteTable(&table))
	require.Contains(t, table.String(), "round trips per delivered event")
	require.Contains(t, table.String(), "find 4.00, insert 2.00")
	require.Contains(t, table.String(), "ReceiveMessage 0.30")

	// Without a counter there is nothing to report.
	plain := &runner{}
	require.Nil(t, plain.costSince(t.Context(), plain.sampleCost()).per1k(10).RoundTrips)
	table.Reset()
	require.NoError(t, (&Report{Ingest: []IngestResult{{Batch: 1, Connections: 8}}}).WriteTable(&table))
	require.NotContains(t, table.String(), "round trips")
}
