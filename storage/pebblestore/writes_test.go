package pebblestore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/storage/embedded"
	"github.com/hooklane/hooklane/storage/pipelinetest"
	"github.com/hooklane/hooklane/stream"
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
// (the same, and the unfinished key deleted, the finished key set); and
// the point reads of the writes: 4 per event — the ingest's dedup key and
// job id, the claim's and the outcome's stored job — and none of the
// status event ids, which the writes' own checks guard (9 when each
// status event id was looked up).
func TestWritesPerDeliveredEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := embedded.Open(ctx, embedded.Config{Dir: t.TempDir()})
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	data := st.Data()
	batches0, _, keys0 := data.BatchStats()
	lookups0 := data.Lookups()
	fsyncs0, err := data.WALFsyncs()
	require.NoError(t, err)
	const n = 40
	// Setting the subscription up writes to the SQLite control plane only.
	got := pipelinetest.DeliverOneAtATime(t, st, n)
	batches, _, keys := data.BatchStats()
	lookups := data.Lookups()
	fsyncs, err := data.WALFsyncs()
	require.NoError(t, err)

	t.Logf("durable write calls for %d delivered events: %v", n, got)
	require.Equal(t, map[string]int64{
		"EventIngest": n, "JobInsertMany": 0, "JobUpdate": 2 * n,
		"EventMarkFannedOut": 0, "StatusEventInsertMany": 0, "CircuitUpdate": 0,
	}, got, "the writes of a delivered event changed: update BENCHMARKS.md's table")
	t.Logf("per delivered event: %.2f commits, %.2f WAL fsyncs, %.2f keys written, %.2f lookups",
		float64(batches-batches0)/n, float64(fsyncs-fsyncs0)/n, float64(keys-keys0)/n, float64(lookups-lookups0)/n)
	require.Equal(t, int64(3*n), batches-batches0, "one commit per write call, one event at a time")
	// Pebble syncs its WAL once per commit here, and once more when it
	// starts a WAL file.
	require.LessOrEqual(t, fsyncs-fsyncs0, uint64(3*n+2), "one WAL fsync per commit")
	require.Equal(t, int64((18+7+9)*n), keys-keys0, "the keys of a delivered event changed: update the doc comment and BENCHMARKS.md")
	require.Equal(t, int64(4*n), lookups-lookups0, "the writes' point reads changed: no status event id is looked up")
}

// TestJobInsertManyLooksUpOnlyUnguardedStatusEvents: JobInsertMany writes
// the status events of the jobs it inserts without looking their ids up,
// and still looks up (and skips when stored) those about no job of the
// call — an event's dispatch.accepted, as fan-out recovery passes it.
func TestJobInsertManyLooksUpOnlyUnguardedStatusEvents(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, err := embedded.Open(ctx, embedded.Config{Dir: t.TempDir()})
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	data := st.Data()
	at := time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)
	accepted := stream.Event{
		ID: "01ACCEPTED", Type: stream.TypeEventAccepted, Time: at, Subject: "01EVENT",
		Data: stream.Data{EventID: "01EVENT", Subscriptions: []string{"a"}},
	}
	require.NoError(t, data.StatusEventInsertMany(ctx, []stream.Event{accepted}))

	job := &dispatch.Job{
		ID: "01JOB", Kind: dispatch.KindEvent, EventID: "01EVENT", SubscriptionID: "01SUB", Mode: dispatch.ModeImmediate,
		Status: dispatch.StatusQueued, CreatedAt: at, UpdatedAt: at,
	}
	created := job.StatusEvent("01CREATED", stream.TypeDispatchCreated, at)
	changed := accepted
	changed.Data.Subscriptions = []string{"changed"}
	lookups0 := data.Lookups()
	require.NoError(t, data.JobInsertMany(ctx, &dispatch.JobInsertManyParams{
		Jobs: []*dispatch.Job{job}, Events: []stream.Event{changed, created},
	}))
	require.Equal(t, int64(2), data.Lookups()-lookups0, "the job id and the unguarded event's id; not the job's own event")

	got, err := data.StatusEventListBySubject(ctx, "01EVENT")
	require.NoError(t, err)
	require.Equal(t, []stream.Event{accepted}, got, "a stored id about no job of the call is skipped")
	got, err = data.StatusEventListBySubject(ctx, "01JOB")
	require.NoError(t, err)
	require.Equal(t, []stream.Event{created}, got)
}
