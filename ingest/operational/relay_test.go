package operational_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/ingest/operational"
	"github.com/hooklane/hooklane/stream"
)

// crashingOutbox is the pipeline's store whose next OutboxDelete fails
// when failNext is set: the relay then behaves as one whose process died
// between the ingest and the delete.
type crashingOutbox struct {
	dispatch.OutboxStore
	failNext atomic.Bool
}

func (o *crashingOutbox) OutboxDelete(ctx context.Context, ids []string) error {
	if o.failNext.CompareAndSwap(true, false) {
		return errors.New("process killed before the delete")
	}
	return o.OutboxStore.OutboxDelete(ctx, ids)
}

// openCircuit stores an OPEN circuit of sub with its status event in the
// outbox, as the lifecycle does with DurableEvents, and returns the event.
func (f *fixture) openCircuit(t *testing.T, subID, code string, version int64) stream.Event {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Millisecond)
	next := now.Add(time.Minute)
	ev := stream.Event{
		ID: f.p.IDs.New(), Type: stream.TypeSubscriptionCircuitOpened, Time: now, Subject: subID,
		Data: stream.Data{Subscription: code, Reason: "10 consecutive failed attempts, the last: HTTP 503", ConsecutiveFailures: 10, NextProbeAt: &next},
	}
	c := &dispatch.Circuit{
		SubscriptionID: subID, State: dispatch.CircuitOpen, ConsecutiveFailures: 10, OpenedAt: &now, NextProbeAt: &next,
		Cooldown: time.Minute, UpdatedAt: now, Version: version,
	}
	require.NoError(t, f.p.Store.CircuitUpdate(context.Background(), &dispatch.CircuitUpdateParams{
		Circuit: c, Events: []stream.Event{ev}, Outbox: []stream.Event{ev},
	}))
	return ev
}

func (f *fixture) count(t *testing.T, typ string) int {
	t.Helper()
	pg, err := f.p.Store.EventList(context.Background(), &event.ListParams{Type: typ, Limit: 100})
	require.NoError(t, err)
	return len(pg.Events)
}

func (f *fixture) outbox(t *testing.T) []stream.Event {
	t.Helper()
	got, err := f.p.Store.OutboxList(context.Background(), 100)
	require.NoError(t, err)
	return got
}

// The relay ingests an outbox event as its operational event and deletes it
// only after; a relay that dies between the two ingests it again on its
// next pass, and the event is still stored once (its id is the outbox id).
func TestRelayIsAtLeastOnceAndDeduplicated(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	ob := &crashingOutbox{OutboxStore: f.p.Store}
	relay := operational.NewRelay(operational.RelayConfig{Outbox: ob, Ingest: f.p.Ingest.Gateway(), Subscriptions: f.p.Store})

	opened := f.openCircuit(t, f.ops.ID, "ops", 0)
	ob.failNext.Store(true)
	n, err := relay.RelayOnce(ctx)
	require.Error(t, err, "the delete failed")
	require.Equal(t, 1, n)
	require.Equal(t, 1, f.count(t, operational.TypeCircuitOpened), "the event is stored before its outbox row is deleted")
	require.Len(t, f.outbox(t), 1, "the row stays until the delete")

	n, err = relay.RelayOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Empty(t, f.outbox(t))
	got := f.event(t, operational.TypeCircuitOpened)
	require.Equal(t, opened.ID, got.Event.ID, "the outbox id is the event's id")
	require.Equal(t, operational.Source, got.Event.Source)
	var data map[string]any
	require.NoError(t, json.Unmarshal(got.Event.Data, &data))
	require.Equal(t, "10 consecutive failed attempts, the last: HTTP 503", data["reason"])
	require.Equal(t, []string{"pager"}, f.subscriptionsOf(t, got), "matched as the Forwarder's events are")

	n, err = relay.RelayOnce(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "nothing left")
}

// A running relay ingests what is in the outbox at its start (left by a
// process that died) and what a write stores later, woken by Observe.
func TestRelayRunDrainsAndWakes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	first := f.openCircuit(t, f.ops.ID, "ops", 0) // before the relay starts: a previous process's
	relayed := make(chan int, 16)
	relay := operational.NewRelay(operational.RelayConfig{
		Outbox: f.p.Store, Ingest: f.p.Ingest.Gateway(), Subscriptions: f.p.Store,
		Interval:    time.Hour, // only the start and Observe make it read
		OnRelayFunc: func(n int) { relayed <- n },
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = relay.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	require.Equal(t, 1, <-relayed)
	require.Equal(t, first.ID, f.event(t, operational.TypeCircuitOpened).Event.ID)

	second := f.openCircuit(t, f.pager.ID, "pager", 0)
	relay.Observe(nil, []stream.Event{{Type: stream.TypeDispatchFailed}}) // not a durable type: no wake
	relay.Observe(nil, []stream.Event{second})
	require.Equal(t, 1, <-relayed)
	require.Empty(t, f.outbox(t))
	require.Equal(t, 2, f.count(t, operational.TypeCircuitOpened))
}

// A Durable Forwarder leaves every operational event to the relay: it
// ingests nothing, the discarded jobs' events included (they go through the
// outbox too). Its Run ingests what it holds before it returns, so after it
// returned nothing more can come.
func TestDurableForwarderLeavesEveryEventToTheRelay(t *testing.T) {
	t.Parallel()
	f := setup(t)
	fwd := operational.NewForwarder(operational.ForwarderConfig{Ingest: f.p.Ingest.Gateway(), Durable: true})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = fwd.Run(ctx) }()

	now := time.Now().UTC()
	opened := stream.Event{
		ID: f.p.IDs.New(), Type: stream.TypeSubscriptionCircuitOpened, Time: now, Subject: f.ops.ID,
		Data: stream.Data{Subscription: "ops", Reason: "10 consecutive failed attempts"},
	}
	j := &dispatch.Job{
		ID: f.p.IDs.New(), Kind: dispatch.KindEvent, Code: "shop.order.created", EventID: "ev-1",
		SubscriptionID: "sub-shop", Subscription: "shop", MessageGroup: "shop:o-1", Status: dispatch.StatusError,
	}
	fwd.Observe(j, []stream.Event{opened, j.StatusEvent(f.p.IDs.New(), stream.TypeDispatchDiscarded, now)})
	cancel()
	<-done
	require.Zero(t, f.count(t, operational.TypeCircuitOpened))
	require.Zero(t, f.count(t, operational.TypeDispatchDiscarded))
	require.Zero(t, fwd.Dropped())
}

// The relay renders a discarded job's outbox event as the Forwarder did,
// without the in-memory job: the status event's data, and the stored job
// for its subscription id. A job deleted since is rendered without it; the
// discard of a job of an operational type is dropped from the outbox
// unsent (no news of the news).
func TestRelayIngestsDiscardedJobsFromTheOutbox(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Millisecond)
	newJob := func(code, group string) *dispatch.Job {
		return dispatch.NewTaskJob(&dispatch.TaskSpec{
			ID: f.p.IDs.New(), Code: code, MessageGroup: group, Payload: []byte(`{}`),
			Settings: dispatch.Settings{
				SubscriptionID: "sub-shop", Subscription: "shop", Target: "http://127.0.0.1:9/hook",
				Mode: dispatch.ModeImmediate, Delivery: dispatch.DeliveryPush, MaxAgeSeconds: 60,
				Retry: dispatch.Retry{MaxAttempts: 3, InitialBackoffSeconds: 1, MaxBackoffSeconds: 1},
			},
		}, now)
	}
	discard := func(j *dispatch.Job, errText string) stream.Event {
		t.Helper()
		require.NoError(t, j.Transition(dispatch.StatusError, now.Add(time.Second)))
		ev := j.StatusEvent(f.p.IDs.New(), stream.TypeDispatchDiscarded, now.Add(time.Second))
		ev.Data.StatusCode, ev.Data.Error = 410, errText
		require.NoError(t, f.p.Store.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: j, Events: []stream.Event{ev}, Outbox: []stream.Event{ev}}))
		return ev
	}
	shop := newJob("shop.order.created", "shop:o-1")
	news := newJob(operational.TypeCircuitOpened, "")
	require.NoError(t, f.p.Store.JobInsertMany(ctx, &dispatch.JobInsertManyParams{Jobs: []*dispatch.Job{shop, news}}))
	shop.AttemptCount = 2
	ev := discard(shop, "HTTP 410 from https://user:secret@127.0.0.1:9/hook")
	discard(news, "max age passed before delivery")
	// A job the retention deleted before its event was relayed.
	gone := stream.Event{
		ID: f.p.IDs.New(), Type: stream.TypeDispatchDiscarded, Time: now, Subject: "job-gone",
		Data: stream.Data{JobID: "job-gone", EventType: "shop.order.paid", Subscription: "shop", Error: "max age passed before delivery"},
	}
	gj := newJob("shop.order.paid", "")
	require.NoError(t, f.p.Store.JobInsertMany(ctx, &dispatch.JobInsertManyParams{Jobs: []*dispatch.Job{gj}}))
	require.NoError(t, gj.Transition(dispatch.StatusError, now))
	require.NoError(t, f.p.Store.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: gj, Outbox: []stream.Event{gone}}))
	require.Len(t, f.outbox(t), 3)

	relay := operational.NewRelay(operational.RelayConfig{Outbox: f.p.Store, Ingest: f.p.Ingest.Gateway(), Subscriptions: f.p.Store, Jobs: f.p.Store})
	n, err := relay.RelayOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Empty(t, f.outbox(t), "ingested or dropped, all deleted")

	pg, err := f.p.Store.EventList(ctx, &event.ListParams{Type: operational.TypeDispatchDiscarded, Limit: 100})
	require.NoError(t, err)
	require.Len(t, pg.Events, 2, "the operational job's discard makes no news")
	byID := map[string]*event.Event{}
	for _, e := range pg.Events {
		byID[e.Event.ID] = e
	}
	got := byID[ev.ID]
	require.NotNil(t, got, "the outbox id is the event's id")
	var data map[string]any
	require.NoError(t, json.Unmarshal(got.Event.Data, &data))
	require.Equal(t, map[string]any{
		"jobId": shop.ID, "eventType": "shop.order.created", "subscriptionId": "sub-shop", "subscription": "shop",
		"messageGroup": "shop:o-1", "attempt": float64(2), "statusCode": float64(410),
		"error": "HTTP 410 from https://***@127.0.0.1:9/***", // masked as the Forwarder masks it
	}, data)
	require.Equal(t, "sub-shop", got.Event.Ext("subscriptionid"))
	require.Equal(t, []string{"ops"}, f.subscriptionsOf(t, got))

	got = byID[gone.ID]
	require.NotNil(t, got)
	data = nil
	require.NoError(t, json.Unmarshal(got.Event.Data, &data))
	require.Equal(t, map[string]any{
		"jobId": "job-gone", "eventType": "shop.order.paid", "subscription": "shop", "error": "max age passed before delivery",
	}, data, "rendered from the status event alone")
}
