package ingest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/clocktest"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/event/schema"
	"github.com/hooklane/hooklane/ingest"
	"github.com/hooklane/hooklane/queue"
	"github.com/hooklane/hooklane/queue/memqueue"
	"github.com/hooklane/hooklane/storage/pipelinetest"
	"github.com/hooklane/hooklane/storage/sqlitestore"
	"github.com/hooklane/hooklane/subscription"
)

type serviceBundle struct {
	svc      *ingest.Service
	store    *sqlitestore.Store
	queue    *memqueue.Queue
	clock    *clocktest.Clock
	sub      *subscription.Subscription
	ids      *idgen.Generator
	registry *schema.Registry
	subs     *subscription.Cache
}

func setupService(t *testing.T) *serviceBundle {
	t.Helper()
	ctx := context.Background()
	clk := clocktest.New(time.Now().UTC().Truncate(time.Millisecond))
	p := pipelinetest.New(t, pipelinetest.Config{NowFunc: clk.Now})
	st, ids := p.Store, p.IDs
	require.NoError(t, st.EventTypeInsert(ctx, &schema.EventType{Code: "shop.order.created", Name: "x", Status: schema.TypeCurrent, CreatedAt: clk.Now(), UpdatedAt: clk.Now()}))
	sub := &subscription.Subscription{
		ID: ids.New(), Code: "orders", EventTypes: []subscription.Binding{{EventTypeCode: "shop.order.created"}},
		Target: "http://127.0.0.1:9/hook", CreatedAt: clk.Now(), UpdatedAt: clk.Now(),
	}
	sub.ApplyDefaults()
	require.NoError(t, st.SubscriptionInsert(ctx, sub))
	return &serviceBundle{svc: p.Ingest, store: st, queue: p.Queue, clock: clk, sub: sub, ids: ids, registry: p.Registry, subs: p.Subs}
}

// firstWrite stores what a first request for orderEvent wrote before it
// died: the event with id, and its job when withJob. It returns both (the
// job is built either way: it is what the first request would have
// written).
func (b *serviceBundle) firstWrite(t *testing.T, id string, withJob bool) (*event.Event, *dispatch.Job) {
	t.Helper()
	ev := orderEvent()
	now := b.clock.Now()
	stored := &event.Event{ID: id, ReceivedAt: now, DedupKey: ingest.DedupKey(&ev), Event: ev}
	job := dispatch.NewEventJob(stored, b.sub.JobSettings(), now)
	item := dispatch.EventIngestItem{Event: stored}
	if withJob {
		item.Jobs = []*dispatch.Job{job}
	}
	_, err := b.store.EventIngest(context.Background(), &dispatch.EventIngestParams{Items: []dispatch.EventIngestItem{item}})
	require.NoError(t, err)
	return stored, job
}

func orderEvent() cloudevent.Event {
	return cloudevent.Event{SpecVersion: "1.0", ID: "o-1", Source: "/shop", Type: "shop.order.created", Data: []byte(`{}`)}
}

// TestDuplicateResendsJobsNeverSent covers a request that stored its event
// and jobs and then died before sending them: the producer's retry (a
// duplicate) sends them, once they are old enough not to be in flight from
// the first request.
func TestDuplicateResendsJobsNeverSent(t *testing.T) {
	t.Parallel()
	b := setupService(t)
	ctx := context.Background()

	// The first request's store write, without its queue send.
	_, job := b.firstWrite(t, "01JDAAAAAAAAAAAAAAAAAAAAAA", true)

	receive := func() []queue.Message {
		msgs, err := b.queue.Receive(ctx, queue.ReceiveParams{Max: 10})
		require.NoError(t, err)
		return msgs
	}

	// A retry right away does not resend: the first request may still be
	// sending.
	b.clock.Advance(time.Second)
	res, err := b.svc.Ingest(ctx, &ingest.Request{Mode: ingest.ModeStructured, Events: []cloudevent.Event{orderEvent()}})
	require.NoError(t, err)
	require.True(t, res[0].Duplicate)
	require.Empty(t, receive())

	// A later retry sends the job that never reached the queue.
	b.clock.Advance(10 * time.Second)
	res, err = b.svc.Ingest(ctx, &ingest.Request{Mode: ingest.ModeStructured, Events: []cloudevent.Event{orderEvent()}})
	require.NoError(t, err)
	require.True(t, res[0].Duplicate)
	msgs := receive()
	require.Len(t, msgs, 1)
	require.Equal(t, job.ID, messageJobID(t, msgs[0].Body))
}

// halfWrittenStore is the real store as a writer that died between an
// event and its jobs leaves it (the MongoDB adapter writes them one after
// the other, without a transaction): the events named in unfanned read
// back without their fanned-out mark.
type halfWrittenStore struct {
	*sqlitestore.Store
	unfanned map[string]bool
}

func (s *halfWrittenStore) EventGetByID(ctx context.Context, id string) (*event.Event, error) {
	ev, err := s.Store.EventGetByID(ctx, id)
	if err == nil && s.unfanned[id] {
		ev.FannedOutAt = nil
	}
	return ev, err
}

func (s *halfWrittenStore) EventMarkFannedOut(ctx context.Context, ids []string, at time.Time) error {
	for _, id := range ids {
		delete(s.unfanned, id)
	}
	return s.Store.EventMarkFannedOut(ctx, ids, at)
}

// TestDuplicateCompletesHalfWrittenFanOut covers a first request that
// stored its event and died before its jobs: the producer's retry must
// create and queue the jobs before it answers — the fan-out poller would do
// it only later, after the producer's next events of the same message
// group had overtaken this one.
func TestDuplicateCompletesHalfWrittenFanOut(t *testing.T) {
	t.Parallel()
	b := setupService(t)
	ctx := context.Background()

	// The first request's event write, without its jobs.
	stored, want := b.firstWrite(t, "01JDAAAAAAAAAAAAAAAAAAAAAB", false)
	st := &halfWrittenStore{Store: b.store, unfanned: map[string]bool{stored.ID: true}}
	lc := dispatch.NewLifecycle(dispatch.LifecycleConfig{Store: b.store, Queue: b.queue, NewID: b.ids.New, NowFunc: b.clock.Now})
	svc := ingest.New(ingest.Config{Store: st, Validator: b.registry, Matcher: b.subs, Jobs: lc, IDs: b.ids, NowFunc: b.clock.Now})

	// An immediate retry: the duplicate answer carries the job, stored and
	// already sent.
	b.clock.Advance(100 * time.Millisecond)
	res, err := svc.Ingest(ctx, &ingest.Request{Mode: ingest.ModeStructured, Events: []cloudevent.Event{orderEvent()}})
	require.NoError(t, err)
	require.True(t, res[0].Duplicate)
	require.Equal(t, stored.ID, res[0].Event.ID)
	require.Len(t, res[0].Jobs, 1)
	require.Equal(t, want.ID, res[0].Jobs[0].ID, "the job id is the one the first request would have written")
	jobs, err := b.store.JobListByEvent(ctx, stored.ID)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	msgs, err := b.queue.Receive(ctx, queue.ReceiveParams{Max: 10})
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.Equal(t, want.ID, messageJobID(t, msgs[0].Body))
	require.Empty(t, st.unfanned, "the event is marked fanned out")
}

// TestIngestQueuesNewJobs checks the plain path: a new event's job is
// stored QUEUED and sent, and a duplicate answers with the original.
func TestIngestQueuesNewJobs(t *testing.T) {
	t.Parallel()
	b := setupService(t)
	ctx := context.Background()
	res, err := b.svc.Ingest(ctx, &ingest.Request{Mode: ingest.ModeStructured, Events: []cloudevent.Event{orderEvent()}})
	require.NoError(t, err)
	require.False(t, res[0].Duplicate)
	require.Len(t, res[0].Jobs, 1)
	require.Equal(t, dispatch.StatusQueued, res[0].Jobs[0].Status)
	require.Equal(t, "orders", res[0].Jobs[0].Subscription)
	msgs, err := b.queue.Receive(ctx, queue.ReceiveParams{Max: 10})
	require.NoError(t, err)
	require.Len(t, msgs, 1)

	again, err := b.svc.Ingest(ctx, &ingest.Request{Mode: ingest.ModeStructured, Events: []cloudevent.Event{orderEvent()}})
	require.NoError(t, err)
	require.True(t, again[0].Duplicate)
	require.Equal(t, res[0].Event.ID, again[0].Event.ID)
	require.Equal(t, res[0].Jobs[0].ID, again[0].Jobs[0].ID)
}

// messageJobID returns the id of the job a queue message is about.
func messageJobID(t *testing.T, body []byte) string {
	t.Helper()
	c, err := dispatch.ReadMessage(body)
	require.NoError(t, err)
	return c.JobID
}
