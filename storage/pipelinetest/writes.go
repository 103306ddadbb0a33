package pipelinetest

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
	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription"
)

// WritesStore is a whole store as the embedded pipeline uses it: what
// the ingest service, the job lifecycle and its circuits, the router, the
// pools, the subscription cache and the schema registry read and write,
// the inserts that set up one subscription, and the status events'
// own insert.
//
//nolint:interfacebloat // the composition of the pipeline's small ports (STYLE §4): what the store under test must satisfy
type WritesStore interface {
	ingest.ServiceStore
	dispatch.LifecycleStore
	dispatch.CircuitStore
	router.Store
	router.PoolLookup
	subscription.CacheStore
	schema.RegistryStore
	PoolInsert(ctx context.Context, p *pool.Pool) error
	EventTypeInsert(ctx context.Context, et *schema.EventType) error
	SubscriptionInsert(ctx context.Context, s *subscription.Subscription) error
	// StatusEventInsertMany is counted too: a status event written apart
	// from its job's write would show there.
	StatusEventInsertMany(ctx context.Context, events []stream.Event) error
}

// writeCounter is a store as the pipeline sees it, counting every durable
// write call by kind.
type writeCounter struct {
	WritesStore
	ingests, jobInserts, jobUpdates, fanOutMarks, statusInserts, circuitUpdates atomic.Int64
}

func (c *writeCounter) EventIngest(ctx context.Context, p *dispatch.EventIngestParams) ([]dispatch.EventIngestResult, error) {
	c.ingests.Add(1)
	return c.WritesStore.EventIngest(ctx, p)
}

func (c *writeCounter) JobInsertMany(ctx context.Context, p *dispatch.JobInsertManyParams) error {
	c.jobInserts.Add(1)
	return c.WritesStore.JobInsertMany(ctx, p)
}

func (c *writeCounter) JobUpdate(ctx context.Context, p *dispatch.JobUpdateParams) error {
	c.jobUpdates.Add(1)
	return c.WritesStore.JobUpdate(ctx, p)
}

func (c *writeCounter) EventMarkFannedOut(ctx context.Context, ids []string, at time.Time) error {
	c.fanOutMarks.Add(1)
	return c.WritesStore.EventMarkFannedOut(ctx, ids, at)
}

func (c *writeCounter) StatusEventInsertMany(ctx context.Context, events []stream.Event) error {
	c.statusInserts.Add(1)
	return c.WritesStore.StatusEventInsertMany(ctx, events)
}

func (c *writeCounter) CircuitUpdate(ctx context.Context, p *dispatch.CircuitUpdateParams) error {
	c.circuitUpdates.Add(1)
	return c.WritesStore.CircuitUpdate(ctx, p)
}

// counts are the write calls counted, by the store method's name.
func (c *writeCounter) counts() map[string]int64 {
	return map[string]int64{
		"EventIngest": c.ingests.Load(), "JobInsertMany": c.jobInserts.Load(), "JobUpdate": c.jobUpdates.Load(),
		"EventMarkFannedOut": c.fanOutMarks.Load(), "StatusEventInsertMany": c.statusInserts.Load(),
		"CircuitUpdate": c.circuitUpdates.Load(),
	}
}

// okTransport answers every delivery 200 at once: the writes of a delivery
// are the store's, whatever carries it.
type okTransport struct{}

func (okTransport) Deliver(context.Context, *router.Delivery) dispatch.Outcome {
	return dispatch.Outcome{Attempted: true, Attempt: dispatch.Attempt{StatusCode: 200, DurationMs: 1}}
}

// DeliverOneAtATime wires the embedded pipeline over st as cmd/hooklane
// wires it — the in-process queue, the subscription cache, the schema
// registry, the job lifecycle with its circuits, the ingest service and
// the router, the transport answering 200 — sets up one subscription,
// ingests n single events one at a time, each delivered before the next is
// sent, and returns the store's durable write calls by method name
// (EventIngest, JobInsertMany, JobUpdate, EventMarkFannedOut,
// StatusEventInsertMany, CircuitUpdate). The router has stopped, and its
// last outcome is committed, when it returns. Only the subscription's setup
// writes to st before the first event.
func DeliverOneAtATime(tb testing.TB, st WritesStore, n int) map[string]int64 {
	tb.Helper()
	ctx := context.Background()
	cw := &writeCounter{WritesStore: st}
	q := memqueue.New(memqueue.Config{VisibilityTimeout: time.Minute})
	defer func() { require.NoError(tb, q.Close()) }()
	ids := idgen.New(nil)
	now := time.Now().UTC().Truncate(time.Millisecond)
	require.NoError(tb, st.PoolInsert(ctx, &pool.Pool{
		ID: ids.New(), Code: pool.DefaultPoolCode, Name: "Default", Burst: 1,
		Concurrency: pool.DefaultPoolConcurrency, CreatedAt: now, UpdatedAt: now,
	}))
	require.NoError(tb, st.EventTypeInsert(ctx, &schema.EventType{
		Code: "shop.order.created", Name: "x", Status: schema.TypeCurrent, CreatedAt: now, UpdatedAt: now,
	}))
	sub := &subscription.Subscription{
		ID: ids.New(), Code: "orders", EventTypes: []subscription.Binding{{EventTypeCode: "shop.order.created"}},
		Target: "http://127.0.0.1:9/hook", CreatedAt: now, UpdatedAt: now,
	}
	sub.ApplyDefaults()
	require.NoError(tb, st.SubscriptionInsert(ctx, sub))

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

	for i := range n {
		ev := cloudevent.Event{
			SpecVersion: "1.0", ID: fmt.Sprintf("order-%d", i), Source: "/shop/eu-1", Type: "shop.order.created",
			Data: []byte(`{"orderId":"` + strconv.Itoa(i) + `"}`),
		}
		res, err := svc.Ingest(ctx, &ingest.Request{Mode: ingest.ModeStructured, Events: []cloudevent.Event{ev}})
		require.NoError(tb, err)
		require.Len(tb, res[0].Jobs, 1)
		select {
		case <-delivered:
		case <-time.After(30 * time.Second):
			require.FailNow(tb, "event not delivered", "event %d", i)
		}
	}
	cancel()
	wg.Wait()
	return cw.counts()
}
