package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription"
)

// newCircuit returns an OPEN circuit with every field set.
func newCircuit(subscriptionID string) *dispatch.Circuit {
	at := baseTime()
	return &dispatch.Circuit{
		SubscriptionID: subscriptionID, State: dispatch.CircuitOpen, ConsecutiveFailures: 10,
		OpenedAt: new(at), NextProbeAt: new(at.Add(30 * time.Second)), Cooldown: 30 * time.Second,
		FailingSince: new(at.Add(-time.Minute)), UpdatedAt: at,
	}
}

func testCircuit(t *testing.T, newStore NewStoreFunc) {
	t.Helper()

	t.Run("InsertGetUpdateVersioned", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		_, err := b.store.CircuitGet(b.ctx, "sub-1")
		require.ErrorIs(t, err, store.ErrNotFound, "no circuit stored yet")

		c := newCircuit("sub-1")
		opened := b.statusEvent(stream.TypeSubscriptionCircuitOpened, "sub-1", baseTime())
		opened.Data = stream.Data{
			Subscription: "orders", Reason: "10 consecutive failed attempts",
			ConsecutiveFailures: 10, NextProbeAt: c.NextProbeAt, ClientID: "client-1",
		}
		require.NoError(t, b.store.CircuitUpdate(b.ctx, &dispatch.CircuitUpdateParams{Circuit: c, Events: []stream.Event{opened}}))
		require.EqualValues(t, 1, c.Version, "an insert sets version 1 on the passed circuit")
		got, err := b.store.CircuitGet(b.ctx, "sub-1")
		require.NoError(t, err)
		require.Equal(t, c, got)

		events, err := b.store.StatusEventListBySubject(b.ctx, "sub-1")
		require.NoError(t, err)
		require.Equal(t, []stream.Event{opened}, events, "the status events are stored with the circuit")

		again := newCircuit("sub-1")
		require.ErrorIs(t, b.store.CircuitUpdate(b.ctx, &dispatch.CircuitUpdateParams{Circuit: again}), store.ErrConflict,
			"a second insert (version 0) conflicts")

		half := *got
		half.State = dispatch.CircuitHalfOpen
		half.ProbeJobID = "job-1"
		half.ProbeUntil = new(baseTime().Add(time.Minute))
		half.UpdatedAt = baseTime().Add(time.Second)
		require.NoError(t, b.store.CircuitUpdate(b.ctx, &dispatch.CircuitUpdateParams{Circuit: &half}))
		require.EqualValues(t, 2, half.Version)

		stale := *got // still at version 1: a racing writer that lost
		stale.State = dispatch.CircuitHalfOpen
		stale.ProbeJobID = "job-2"
		require.ErrorIs(t, b.store.CircuitUpdate(b.ctx, &dispatch.CircuitUpdateParams{Circuit: &stale}), store.ErrStale)
		require.EqualValues(t, 1, stale.Version, "a refused write leaves the version")

		got, err = b.store.CircuitGet(b.ctx, "sub-1")
		require.NoError(t, err)
		require.Equal(t, &half, got, "the winner's write is kept")

		closed := &dispatch.Circuit{SubscriptionID: "sub-1", State: dispatch.CircuitClosed, UpdatedAt: baseTime().Add(2 * time.Second), Version: 2}
		require.NoError(t, b.store.CircuitUpdate(b.ctx, &dispatch.CircuitUpdateParams{Circuit: closed}))
		got, err = b.store.CircuitGet(b.ctx, "sub-1")
		require.NoError(t, err)
		require.Equal(t, closed, got, "nil times and empty fields round-trip")

		require.NoError(t, b.store.CircuitDelete(b.ctx, "sub-1"))
		_, err = b.store.CircuitGet(b.ctx, "sub-1")
		require.ErrorIs(t, err, store.ErrNotFound)
		require.NoError(t, b.store.CircuitDelete(b.ctx, "sub-1"), "deleting none is no error")
	})

	t.Run("GetManyAndListNotClosed", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		late := newCircuit("sub-late")
		late.OpenedAt = new(baseTime().Add(time.Hour))
		early := newCircuit("sub-early")
		half := newCircuit("sub-half")
		half.OpenedAt = new(baseTime().Add(time.Minute))
		half.State = dispatch.CircuitHalfOpen
		half.ProbeJobID, half.ProbeUntil = "job-9", new(baseTime().Add(2*time.Minute))
		closed := &dispatch.Circuit{SubscriptionID: "sub-closed", State: dispatch.CircuitClosed, ConsecutiveFailures: 3, UpdatedAt: baseTime()}
		for _, c := range []*dispatch.Circuit{late, early, half, closed} {
			require.NoError(t, b.store.CircuitUpdate(b.ctx, &dispatch.CircuitUpdateParams{Circuit: c}))
		}
		got, err := b.store.CircuitListNotClosed(b.ctx, 10)
		require.NoError(t, err)
		require.Equal(t, []*dispatch.Circuit{early, half, late}, got, "earliest opened first, CLOSED left out")
		got, err = b.store.CircuitListNotClosed(b.ctx, 2)
		require.NoError(t, err)
		require.Equal(t, []*dispatch.Circuit{early, half}, got)

		many, err := b.store.CircuitGetMany(b.ctx, []string{"sub-closed", "sub-late", "sub-none"})
		require.NoError(t, err)
		require.ElementsMatch(t, []*dispatch.Circuit{closed, late}, many)
		many, err = b.store.CircuitGetMany(b.ctx, nil)
		require.NoError(t, err)
		require.Empty(t, many)
	})

	t.Run("SubscriptionDisable", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		sub := b.newSubscription("orders", nil)
		require.NoError(t, b.store.SubscriptionInsert(b.ctx, sub))
		gen := b.subscriptionGeneration(t)
		at := baseTime().Add(time.Hour)
		ev := b.statusEvent(stream.TypeSubscriptionDisabled, sub.ID, at)
		ev.Data = stream.Data{Subscription: "orders", Reason: "every attempt failed", ConsecutiveFailures: 12}
		changed, err := b.store.SubscriptionDisable(b.ctx, &dispatch.SubscriptionDisableParams{
			SubscriptionID: sub.ID, Reason: "every attempt failed", At: at, Events: []stream.Event{ev},
		})
		require.NoError(t, err)
		require.True(t, changed)
		require.Greater(t, b.subscriptionGeneration(t), gen, "a disable is announced like any subscription write")

		got, err := b.store.SubscriptionGetByID(b.ctx, sub.ID)
		require.NoError(t, err)
		want := *sub
		want.Status = subscription.StatusPaused
		want.StatusReason = new("every attempt failed")
		want.UpdatedAt = at
		want.Version = sub.Version + 1
		require.Equal(t, &want, got, "only status, statusReason and updatedAt change, and the version grows")
		events, err := b.store.StatusEventListBySubject(b.ctx, sub.ID)
		require.NoError(t, err)
		require.Equal(t, []stream.Event{ev}, events)

		paused, err := b.store.SubscriptionList(b.ctx, &subscription.ListParams{Status: subscription.StatusPaused})
		require.NoError(t, err)
		require.Len(t, paused.Subscriptions, 1, "the status filter sees the change")

		changed, err = b.store.SubscriptionDisable(b.ctx, &dispatch.SubscriptionDisableParams{
			SubscriptionID: sub.ID, Reason: "again", At: at.Add(time.Minute),
			Events: []stream.Event{b.statusEvent(stream.TypeSubscriptionDisabled, sub.ID, at)},
		})
		require.NoError(t, err)
		require.False(t, changed, "a subscription that is not ACTIVE is left alone")
		events, err = b.store.StatusEventListBySubject(b.ctx, sub.ID)
		require.NoError(t, err)
		require.Len(t, events, 1, "and no status event is stored")

		// An operator's resume (a plain update) clears the reason.
		got.Status, got.StatusReason = subscription.StatusActive, nil
		require.NoError(t, b.store.SubscriptionUpdate(b.ctx, got))
		again, err := b.store.SubscriptionGetByID(b.ctx, sub.ID)
		require.NoError(t, err)
		require.Equal(t, got, again)

		_, err = b.store.SubscriptionDisable(b.ctx, &dispatch.SubscriptionDisableParams{SubscriptionID: "missing", Reason: "x", At: at})
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("Outbox", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		// Every adapter keeps the operational outbox: the circuit and
		// disable events survive a crash only through it (API.md §12).
		ob, ok := b.store.(dispatch.OutboxStore)
		require.True(t, ok, "the adapter must implement dispatch.OutboxStore")
		list := func(limit int) []stream.Event {
			t.Helper()
			got, err := ob.OutboxList(b.ctx, limit)
			require.NoError(t, err)
			return got
		}
		require.Empty(t, list(10))
		circuitEvent := func(typ string, at time.Time) stream.Event {
			e := b.statusEvent(typ, "sub-1", at)
			e.Data = stream.Data{Subscription: "orders", Reason: "10 consecutive failed attempts, the last: HTTP 503", ConsecutiveFailures: 10, NextProbeAt: new(at.Add(time.Minute))}
			return e
		}

		// An opening stores its outbox event with the circuit.
		c := newCircuit("sub-1")
		o1 := circuitEvent(stream.TypeSubscriptionCircuitOpened, baseTime())
		require.NoError(t, b.store.CircuitUpdate(b.ctx, &dispatch.CircuitUpdateParams{Circuit: c, Events: []stream.Event{o1}, Outbox: []stream.Event{o1}}))
		require.Equal(t, []stream.Event{o1}, list(10), "the outbox event is stored with the insert")

		// A later transition adds its own and keeps the one not relayed.
		closed := &dispatch.Circuit{SubscriptionID: "sub-1", State: dispatch.CircuitClosed, UpdatedAt: baseTime().Add(time.Second), Version: 1}
		o2 := circuitEvent(stream.TypeSubscriptionCircuitClosed, baseTime().Add(time.Second))
		require.NoError(t, b.store.CircuitUpdate(b.ctx, &dispatch.CircuitUpdateParams{Circuit: closed, Events: []stream.Event{o2}, Outbox: []stream.Event{o2}}))
		require.Equal(t, []stream.Event{o1, o2}, list(10))

		// A write that loses the version check stores no outbox event.
		stale := newCircuit("sub-1")
		stale.Version = 1
		o3 := circuitEvent(stream.TypeSubscriptionCircuitOpened, baseTime().Add(2*time.Second))
		require.ErrorIs(t, b.store.CircuitUpdate(b.ctx, &dispatch.CircuitUpdateParams{Circuit: stale, Outbox: []stream.Event{o3}}), store.ErrStale)
		require.Equal(t, []stream.Event{o1, o2}, list(10), "a refused write stores no outbox event")

		// An auto-disable stores its outbox event with the subscription.
		sub := b.newSubscription("orders", nil)
		require.NoError(t, b.store.SubscriptionInsert(b.ctx, sub))
		o4 := b.statusEvent(stream.TypeSubscriptionDisabled, sub.ID, baseTime().Add(3*time.Second))
		o4.Data = stream.Data{Subscription: "orders", Reason: "every attempt failed", ConsecutiveFailures: 12}
		changed, err := b.store.SubscriptionDisable(b.ctx, &dispatch.SubscriptionDisableParams{
			SubscriptionID: sub.ID, Reason: "every attempt failed", At: baseTime(), Events: []stream.Event{o4}, Outbox: []stream.Event{o4},
		})
		require.NoError(t, err)
		require.True(t, changed)
		o5 := b.statusEvent(stream.TypeSubscriptionDisabled, sub.ID, baseTime().Add(4*time.Second))
		changed, err = b.store.SubscriptionDisable(b.ctx, &dispatch.SubscriptionDisableParams{
			SubscriptionID: sub.ID, Reason: "again", At: baseTime(), Outbox: []stream.Event{o5},
		})
		require.NoError(t, err)
		require.False(t, changed)
		require.Equal(t, []stream.Event{o1, o2, o4}, list(10), "oldest first; a disable that changed nothing stores none")
		require.Equal(t, []stream.Event{o1, o2}, list(2), "at most limit")

		// The relay deletes what it ingested; unknown ids are no error.
		require.NoError(t, ob.OutboxDelete(b.ctx, []string{o1.ID, o4.ID, "missing"}))
		require.Equal(t, []stream.Event{o2}, list(10))
		// A transition after a delete neither brings the deleted back nor
		// drops the one left.
		opened := newCircuit("sub-1")
		opened.Version = 2
		require.NoError(t, b.store.CircuitUpdate(b.ctx, &dispatch.CircuitUpdateParams{Circuit: opened}))
		require.Equal(t, []stream.Event{o2}, list(10))
		got, err := b.store.CircuitGet(b.ctx, "sub-1")
		require.NoError(t, err)
		require.Equal(t, opened, got, "the outbox is not part of the circuit")
		require.NoError(t, ob.OutboxDelete(b.ctx, []string{o2.ID}))
		require.Empty(t, list(10))
		require.NoError(t, ob.OutboxDelete(b.ctx, nil))
	})

	t.Run("JobOutbox", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		// A job's discard stores its dispatch.discarded event in the
		// operational outbox with the job update (API.md §12, issue 32).
		ob, ok := b.store.(dispatch.OutboxStore)
		require.True(t, ok, "the adapter must implement dispatch.OutboxStore")
		list := func() []stream.Event {
			t.Helper()
			got, err := ob.OutboxList(b.ctx, 10)
			require.NoError(t, err)
			return got
		}
		job := b.newJob(nil)
		other := b.newJob(nil)
		b.insertJobs(t, job, other)

		read, err := b.store.JobGetByID(b.ctx, job.ID)
		require.NoError(t, err)
		stale := *read
		at := baseTime().Add(time.Second)
		read.LastError = new("max age passed before delivery")
		require.NoError(t, read.Transition(dispatch.StatusError, at))
		d1 := b.statusEvent(stream.TypeDispatchDiscarded, job.ID, at)
		require.NoError(t, b.store.JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: read, Events: []stream.Event{d1}, Outbox: []stream.Event{d1}}))
		require.Equal(t, []stream.Event{d1}, list(), "the outbox event is stored with the job update")
		got, err := b.store.JobGetByID(b.ctx, job.ID)
		require.NoError(t, err)
		require.Equal(t, read, got, "the outbox is not part of the job")

		// An update that loses the version check stores no outbox event.
		stale.LastError = new("lost")
		require.NoError(t, stale.Transition(dispatch.StatusError, at))
		lost := b.statusEvent(stream.TypeDispatchDiscarded, job.ID, at)
		err = b.store.JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: &stale, Events: []stream.Event{lost}, Outbox: []stream.Event{lost}})
		require.ErrorIs(t, err, store.ErrStale)
		require.Equal(t, []stream.Event{d1}, list(), "a refused update stores no outbox event")
		// Nor does one of a job that is gone.
		missing := b.newJob(nil)
		missing.Version = 1
		gone := b.statusEvent(stream.TypeDispatchDiscarded, missing.ID, at)
		require.ErrorIs(t, b.store.JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: missing, Outbox: []stream.Event{gone}}), store.ErrNotFound)
		require.Equal(t, []stream.Event{d1}, list())

		// A later write of the job (an operator retry) keeps the event not
		// relayed yet.
		require.NoError(t, read.Transition(dispatch.StatusQueued, at.Add(time.Second)))
		require.NoError(t, b.store.JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: read}))
		require.Equal(t, []stream.Event{d1}, list(), "a later job write keeps the outbox")
		got, err = b.store.JobGetByID(b.ctx, job.ID)
		require.NoError(t, err)
		require.Equal(t, read, got)

		// Another job's discard and a circuit's opening: one outbox,
		// oldest id first.
		o := b.statusEvent(stream.TypeSubscriptionCircuitOpened, "sub-1", at)
		require.NoError(t, b.store.CircuitUpdate(b.ctx, &dispatch.CircuitUpdateParams{Circuit: newCircuit("sub-1"), Outbox: []stream.Event{o}}))
		readOther, err := b.store.JobGetByID(b.ctx, other.ID)
		require.NoError(t, err)
		require.NoError(t, readOther.Transition(dispatch.StatusError, at))
		d2 := b.statusEvent(stream.TypeDispatchDiscarded, other.ID, at)
		require.NoError(t, b.store.JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: readOther, Outbox: []stream.Event{d2}}))
		require.Equal(t, []stream.Event{d1, o, d2}, list())

		// The relay deletes what it ingested; the job stays as it is and
		// its next write does not bring the event back.
		require.NoError(t, ob.OutboxDelete(b.ctx, []string{d1.ID, o.ID}))
		require.Equal(t, []stream.Event{d2}, list())
		require.NoError(t, read.Transition(dispatch.StatusInProgress, at.Add(2*time.Second)))
		require.NoError(t, b.store.JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: read}))
		got, err = b.store.JobGetByID(b.ctx, job.ID)
		require.NoError(t, err)
		require.Equal(t, read, got)
		require.Equal(t, []stream.Event{d2}, list())
		require.NoError(t, ob.OutboxDelete(b.ctx, []string{d2.ID}))
		require.Empty(t, list())
	})
}
