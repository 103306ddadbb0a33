package pebblestore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/storage/embedded"
	"github.com/hooklane/hooklane/storage/pipelinetest"
)

// TestWritesPerDeliveredEvent runs the embedded pipeline — this store
// under storage/embedded, the in-process queue, the subscription cache,
// the job lifecycle, the ingest service and the router, as cmd/hooklane
// wires them, the transport answering 200 — for 40 single events of one
// subscription, one at a time, and counts per delivered event the store's
// write calls (ingest, claim, outcome), the Pebble commits and WAL fsyncs
// they cost (one each, one event at a time: nothing to share them with),
// and the keys written: ingest 18 (the event and its dedup, time and type
// keys; the job and its status, group, event and unfinished keys; three
// status events with their subject and time keys), claim 7 (the job, its
// status key moved — a delete and a set —, its group key rewritten with
// the new status, one status event with its two index keys), outcome 9
// (the same, and the unfinished key deleted, the finished key set).
func TestWritesPerDeliveredEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := embedded.Open(ctx, embedded.Config{Dir: t.TempDir()})
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	data := st.Data()
	batches0, _, keys0 := data.BatchStats()
	fsyncs0, err := data.WALFsyncs()
	require.NoError(t, err)
	const n = 40
	// Setting the subscription up writes to the SQLite control plane only.
	got := pipelinetest.DeliverOneAtATime(t, st, n)
	batches, _, keys := data.BatchStats()
	fsyncs, err := data.WALFsyncs()
	require.NoError(t, err)

	t.Logf("durable write calls for %d delivered events: %v", n, got)
	require.Equal(t, map[string]int64{
		"EventIngest": n, "JobInsertMany": 0, "JobUpdate": 2 * n,
		"EventMarkFannedOut": 0, "StatusEventInsertMany": 0, "CircuitUpdate": 0,
	}, got, "the writes of a delivered event changed: update BENCHMARKS.md's table")
	t.Logf("per delivered event: %.2f commits, %.2f WAL fsyncs, %.2f keys written",
		float64(batches-batches0)/n, float64(fsyncs-fsyncs0)/n, float64(keys-keys0)/n)
	require.Equal(t, int64(3*n), batches-batches0, "one commit per write call, one event at a time")
	// Pebble syncs its WAL once per commit here, and once more when it
	// starts a WAL file.
	require.LessOrEqual(t, fsyncs-fsyncs0, uint64(3*n+2), "one WAL fsync per commit")
	require.Equal(t, int64((18+7+9)*n), keys-keys0, "the keys of a delivered event changed: update the doc comment and BENCHMARKS.md")
}
