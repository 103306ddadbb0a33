package pebblestore_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/dispatch/pool"
	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/event/schema"
	"github.com/hooklane/hooklane/ingest"
	"github.com/hooklane/hooklane/queue/memqueue"
	"github.com/hooklane/hooklane/router"
	"github.com/hooklane/hooklane/storage/embedded"
	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription"
)

// writeCounter is the embedded store as the pipeline sees it, counting
// every durable write call by kind (storage/storespike's counter of
// today's store, on the new one).
type writeCounter struct {
	*embedded.Store
	ingests, jobInserts, jobUpdates, fanOutMarks, statusInserts, circuitUpdates atomic.Int64
}

func (c *writeCounter) EventIngest(ctx context.Context, p *dispatch.EventIngestParams) ([]dispatch.EventIngestResult, error) {
	c.ingests.Add(1)
	return c.Store.EventIngest(ctx, p)
}

func (c *writeCounter) JobInsertMany(ctx context.Context, p *dispatch.JobInsertManyParams) error {
	c.jobInserts.Add(1)
	return c.Store.JobInsertMany(ctx, p)
}

func (c *writeCounter) JobUpdate(ctx context.Context, p *dispatch.JobUpdateParams) error {
	c.jobUpdates.Add(1)
	return c.Store.JobUpdate(ctx, p)
}

func (c *writeCounter) EventMarkFannedOut(ctx context.Context, ids []string, at time.Time) error {
	c.fanOutMarks.Add(1)
	return c.Store.EventMarkFannedOut(ctx, ids, at)
}

func (c *writeCounter) StatusEventInsertMany(ctx context.Context, events []stream.Event) error {
	c.statusInserts.Add(1)
	return c.Store.StatusEventInsertMany(ctx, events)
}

func (c *writeCounter) CircuitUpdate(ctx context.Context, p *dispatch.CircuitUpdateParams) error {
	c.circuitUpdates.Add(1)
	return c.Store.CircuitUpdate(ctx, p)
}

// okTransport answers every delivery 200 at once.
type okTransport struct{}

func (okTransport) Deliver(context.Context, *router.Delivery) dispatch.Outcome {
	return dispatch.Outcome{Attempted: true, Attempt: dispatch.Attempt{StatusCode: 200, DurationMs: 1}}
}

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
	cw := &writeCounter{Store: st}
	q := memqueue.New(memqueue.Config{VisibilityTimeout: time.Minute})
	defer func() { require.NoError(t, q.Close()) }()
	ids := idgen.New(nil)
	now := time.Now().UTC().Truncate(time.Millisecond)
	require.NoError(t, st.PoolInsert(ctx, &pool.Pool{
		ID: ids.New(), Code: pool.DefaultPoolCode, Name: "Default", Burst: 1,
		Concurrency: pool.DefaultPoolConcurrency, CreatedAt: now, UpdatedAt: now,
	}))
	require.NoError(t, st.EventTypeInsert(ctx, &schema.EventType{
		Code: "shop.order.created", Name: "x", Status: schema.TypeCurrent, CreatedAt: now, UpdatedAt: now,
	}))
	sub := &subscription.Subscription{
		ID: ids.New(), Code: "orders", EventTypes: []subscription.Binding{{EventTypeCode: "shop.order.created"}},
		Target: "http://127.0.0.1:9/hook", CreatedAt: now, UpdatedAt: now,
	}
	sub.ApplyDefaults()
	require.NoError(t, st.SubscriptionInsert(ctx, sub))

	subs := subscription.NewCache(subscription.CacheConfig{Store: st})
	defer subs.Close()
	registry := schema.NewRegistry(schema.RegistryConfig{Store: st})
	jobs := dispatch.NewLifecycle(dispatch.LifecycleConfig{
		Store: cw, Queue: q, NewID: ids.New, Circuit: dispatch.CircuitPolicy{Store: cw},
	})
	svc := ingest.New(ingest.Config{Store: cw, Validator: registry, Matcher: subs, Jobs: jobs, IDs: ids})
	delivered := make(chan struct{}, 1)
	rt := router.New(router.Config{
		Queue: q, Store: cw, Subscriptions: subs, Lifecycle: jobs, Pools: router.NewPools(st), Transport: okTransport{},
		WorkerID: "writes:1", ReceiveWait: 50 * time.Millisecond,
		OnAttemptFunc: func(*dispatch.Job, dispatch.Outcome) { delivered <- struct{}{} },
	})
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = rt.Run(runCtx) })
	defer func() { cancel(); wg.Wait() }()

	data := st.Data()
	batches0, _, keys0 := data.BatchStats()
	fsyncs0, err := data.WALFsyncs()
	require.NoError(t, err)
	const n = 40
	for i := range n {
		ev := cloudevent.Event{
			SpecVersion: "1.0", ID: fmt.Sprintf("order-%d", i), Source: "/shop/eu-1", Type: "shop.order.created",
			Data: []byte(`{"orderId":"` + strconv.Itoa(i) + `"}`),
		}
		res, err := svc.Ingest(ctx, &ingest.Request{Mode: ingest.ModeStructured, Events: []cloudevent.Event{ev}})
		require.NoError(t, err)
		require.Len(t, res[0].Jobs, 1)
		select {
		case <-delivered:
		case <-time.After(30 * time.Second):
			require.FailNow(t, "event not delivered", "event %d", i)
		}
	}
	cancel()
	wg.Wait()
	// The last outcome is committed once the router has stopped.
	batches, _, keys := data.BatchStats()
	fsyncs, err := data.WALFsyncs()
	require.NoError(t, err)

	got := map[string]int64{
		"EventIngest": cw.ingests.Load(), "JobInsertMany": cw.jobInserts.Load(), "JobUpdate": cw.jobUpdates.Load(),
		"EventMarkFannedOut": cw.fanOutMarks.Load(), "StatusEventInsertMany": cw.statusInserts.Load(),
		"CircuitUpdate": cw.circuitUpdates.Load(),
	}
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
