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

// A Durable Forwarder leaves the circuit and subscription events to the
// relay and still ingests the discarded jobs' events.
func TestDurableForwarderLeavesCircuitEventsToTheRelay(t *testing.T) {
	t.Parallel()
	f := setup(t)
	fwd := operational.NewForwarder(operational.ForwarderConfig{Ingest: f.p.Ingest.Gateway(), Durable: true})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = fwd.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	now := time.Now().UTC()
	opened := stream.Event{
		ID: f.p.IDs.New(), Type: stream.TypeSubscriptionCircuitOpened, Time: now, Subject: f.ops.ID,
		Data: stream.Data{Subscription: "ops", Reason: "10 consecutive failed attempts"},
	}
	j := &dispatch.Job{
		ID: f.p.IDs.New(), Kind: dispatch.KindEvent, Code: "shop.order.created", EventID: "ev-1",
		SubscriptionID: "sub-shop", Subscription: "shop", MessageGroup: "shop:o-1", Status: dispatch.StatusError,
	}
	// In one Observe, so in one batch: when the discarded event is stored,
	// the opened one would be too.
	fwd.Observe(j, []stream.Event{opened, j.StatusEvent(f.p.IDs.New(), stream.TypeDispatchDiscarded, now)})
	f.event(t, operational.TypeDispatchDiscarded)
	require.Zero(t, f.count(t, operational.TypeCircuitOpened))
}
