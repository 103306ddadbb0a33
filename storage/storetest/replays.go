package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/subscription/replay"
)

// newReplay returns a RUNNING replay with every field set; mod adjusts it.
func (b *testBundle) newReplay(mod func(r *replay.Replay)) *replay.Replay {
	client := "acme"
	r := &replay.Replay{
		ID: b.ids.New(), SubscriptionID: "sub-1", Subscription: "orders", ClientID: &client,
		Status: replay.StatusRunning, Since: baseTime().Add(-time.Hour), Until: baseTime(),
		EventTypes: []string{"order.*"}, Redeliver: true,
		CreatedAt: baseTime(), UpdatedAt: baseTime(),
	}
	if mod != nil {
		mod(r)
	}
	return r
}

func testReplay(t *testing.T, newStore NewStoreFunc) {
	t.Helper()

	t.Run("InsertGetRoundTrip", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		r := b.newReplay(nil)
		require.NoError(t, b.store.ReplayInsert(b.ctx, r))
		require.Equal(t, int64(1), r.Version)
		got, err := b.store.ReplayGetByID(b.ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, r, got)

		require.ErrorIs(t, b.store.ReplayInsert(b.ctx, b.newReplay(func(x *replay.Replay) { x.ID = r.ID })), store.ErrConflict)
		_, err = b.store.ReplayGetByID(b.ctx, "missing")
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("UpdateIsVersionChecked", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		r := b.newReplay(nil)
		require.NoError(t, b.store.ReplayInsert(b.ctx, r))
		stale := *r
		lease := baseTime().Add(time.Minute)
		done := baseTime().Add(2 * time.Minute)
		r.Owner, r.LeaseExpiresAt = "host:1", &lease
		r.AfterReceivedAt, r.AfterID = baseTime().Add(-time.Minute), "01EVENT"
		r.Scanned, r.Matched, r.Created = 10, 7, 5
		r.Status, r.Error, r.CompletedAt = replay.StatusFailed, "gone", &done
		require.NoError(t, b.store.ReplayUpdate(b.ctx, r))
		require.Equal(t, int64(2), r.Version)
		got, err := b.store.ReplayGetByID(b.ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, r, got)

		require.ErrorIs(t, b.store.ReplayUpdate(b.ctx, &stale), store.ErrStale, "a stale version loses")
		require.ErrorIs(t, b.store.ReplayUpdate(b.ctx, b.newReplay(nil)), store.ErrNotFound)
	})

	t.Run("ListNewestFirstBySubscription", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		var mine []*replay.Replay
		for i := range 5 {
			sub := "sub-1"
			if i%2 == 1 {
				sub = "sub-2"
			}
			r := b.newReplay(func(r *replay.Replay) { r.SubscriptionID = sub })
			require.NoError(t, b.store.ReplayInsert(b.ctx, r))
			if sub == "sub-1" {
				mine = append(mine, r)
			}
		}
		p1, err := b.store.ReplayList(b.ctx, &replay.ListParams{SubscriptionID: "sub-1", Limit: 2})
		require.NoError(t, err)
		require.Equal(t, []string{mine[2].ID, mine[1].ID}, replayIDs(p1.Replays))
		require.NotEmpty(t, p1.NextCursor)
		p2, err := b.store.ReplayList(b.ctx, &replay.ListParams{SubscriptionID: "sub-1", Limit: 2, Cursor: p1.NextCursor})
		require.NoError(t, err)
		require.Equal(t, []string{mine[0].ID}, replayIDs(p2.Replays))
		require.Empty(t, p2.NextCursor)
		all, err := b.store.ReplayList(b.ctx, &replay.ListParams{})
		require.NoError(t, err)
		require.Len(t, all.Replays, 5)
	})

	t.Run("ListClaimable", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		now := baseTime()
		free := b.newReplay(nil)
		expired := b.newReplay(func(r *replay.Replay) { r.Owner = "a:1"; r.LeaseExpiresAt = new(now.Add(-time.Second)) })
		held := b.newReplay(func(r *replay.Replay) { r.Owner = "b:1"; r.LeaseExpiresAt = new(now.Add(time.Second)) })
		done := b.newReplay(func(r *replay.Replay) { r.Status = replay.StatusCompleted })
		for _, r := range []*replay.Replay{free, expired, held, done} {
			require.NoError(t, b.store.ReplayInsert(b.ctx, r))
		}
		got, err := b.store.ReplayListClaimable(b.ctx, &replay.ListClaimableParams{Now: now, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []string{free.ID, expired.ID}, replayIDs(got))
		got, err = b.store.ReplayListClaimable(b.ctx, &replay.ListClaimableParams{Now: now.Add(time.Second), Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []string{free.ID, expired.ID, held.ID}, replayIDs(got), "a lease ending now is free")
	})

	t.Run("EventListReceivedPagesByReceivedAtThenID", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		// Ids and receive times deliberately disagree: the walk follows
		// receivedAt, ties broken by id.
		var events []*event.Event
		offsets := []time.Duration{3 * time.Second, time.Second, time.Second, time.Second, 2 * time.Second, 0, 5 * time.Second}
		for _, off := range offsets {
			events = append(events, b.newEvent(func(e *event.Event) { e.ReceivedAt = baseTime().Add(off) }))
		}
		b.ingest(t, events...)
		// since = +1s (inclusive), until = +5s (exclusive): offsets 1,1,1,2,3.
		want := []string{events[1].ID, events[2].ID, events[3].ID, events[4].ID, events[0].ID}
		var got []string
		p := &event.ListReceivedParams{Since: baseTime().Add(time.Second), Until: baseTime().Add(5 * time.Second), Limit: 2}
		for range 10 {
			page, err := b.store.EventListReceived(b.ctx, p)
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			require.LessOrEqual(t, len(page), 2)
			got = append(got, eventIDs(page)...)
			last := page[len(page)-1]
			p.AfterReceivedAt, p.AfterID = last.ReceivedAt, last.ID
		}
		require.Equal(t, want, got)
		page, err := b.store.EventListReceived(b.ctx, &event.ListReceivedParams{Since: baseTime(), Until: baseTime().Add(time.Hour), Limit: 1})
		require.NoError(t, err)
		require.Len(t, page, 1)
		requireEventEqual(t, events[5], page[0])
	})

	t.Run("JobCountUnfinished", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		var jobs []*dispatch.Job
		for _, st := range []dispatch.Status{
			dispatch.StatusPending, dispatch.StatusQueued, dispatch.StatusInProgress,
			dispatch.StatusCompleted, dispatch.StatusError, dispatch.StatusCancelled, dispatch.StatusQueued,
		} {
			jobs = append(jobs, b.newJob(func(j *dispatch.Job) { j.Status = st; j.SubscriptionID = "sub-1" }))
		}
		jobs = append(jobs, b.newJob(func(j *dispatch.Job) { j.SubscriptionID = "sub-2" }))
		b.insertJobs(t, jobs...)
		n, err := b.store.JobCountUnfinished(b.ctx, &replay.JobCountUnfinishedParams{SubscriptionID: "sub-1", Limit: 100})
		require.NoError(t, err)
		require.Equal(t, 4, n)
		n, err = b.store.JobCountUnfinished(b.ctx, &replay.JobCountUnfinishedParams{SubscriptionID: "sub-1", Limit: 2})
		require.NoError(t, err)
		require.Equal(t, 2, n, "the count stops at the limit")
		n, err = b.store.JobCountUnfinished(b.ctx, &replay.JobCountUnfinishedParams{SubscriptionID: "none", Limit: 100})
		require.NoError(t, err)
		require.Zero(t, n)
	})
}

func replayIDs(rs []*replay.Replay) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}
