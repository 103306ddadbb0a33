package mongostore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/storage/mongostore"
	"github.com/hooklane/hooklane/stream"
)

// ingestItem returns an event with two jobs and its status events (the
// event's accepted, each job's created), as the ingest service builds
// them.
func (b *testBundle) ingestItem() dispatch.EventIngestItem {
	ev := b.newEvent()
	j1, j2 := b.newJob(ev.ID), b.newJob(ev.ID)
	j2.SubscriptionID = "sub-2"
	return dispatch.EventIngestItem{Event: ev, Jobs: []*dispatch.Job{j1, j2}, StatusEvents: []stream.Event{
		b.statusEvent(stream.TypeEventAccepted, ev.ID),
		b.statusEvent(stream.TypeDispatchCreated, j1.ID),
		b.statusEvent(stream.TypeDispatchCreated, j2.ID),
	}}
}

func (b *testBundle) statusEvent(typ, subject string) stream.Event {
	return stream.Event{
		ID: b.ids.New(), Type: typ, Subject: subject, Time: baseTime(),
		Data: stream.Data{EventID: subject, EventType: "order.created", Subscriptions: []string{"orders"}},
	}
}

// TestIngestLeavesTheFanOutMarkOffTheRequest: with job writes holding
// their status events (MongoDB's path) an ingest is two commands, the
// event insert and the jobs insert; the event reads as fanned out in the
// process that ingested it while its mark waits, and another instance
// (or this one after a crash) sees it unmarked: the recovery poller's
// re-fan then stores no second job and no second status event.
func TestIngestLeavesTheFanOutMarkOffTheRequest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	db := b.env.newDatabase(t)
	counter := &commandCounter{n: map[string]int{}}
	s := b.env.open(t, db, func(cfg *mongostore.Config) {
		cfg.OnCommandFunc = counter.add
		cfg.StatusRelayInterval = relayIdle
	})
	s.SetHoldStatusEvents(true)
	other := b.env.open(t, db, nil)

	item := b.ingestItem()
	counter.take()
	res, err := s.EventIngest(b.ctx, &dispatch.EventIngestParams{Items: []dispatch.EventIngestItem{item}})
	require.NoError(t, err)
	require.Equal(t, []dispatch.EventIngestResult{{}}, res)
	require.Equal(t, map[string]int{"insert": 2}, counter.take(), "an ingest inserts the event, then the jobs holding the status events")
	require.NotNil(t, item.Event.FannedOutAt, "the ingest's event is marked in memory")

	got, err := s.EventGetByID(b.ctx, item.Event.ID)
	require.NoError(t, err)
	require.NotNil(t, got.FannedOutAt, "the ingesting instance reads its waiting mark")
	got, err = other.EventGetByID(b.ctx, item.Event.ID)
	require.NoError(t, err)
	require.Nil(t, got.FannedOutAt, "the mark is not written yet")

	// What the recovery poller does with an event whose mark was lost
	// (ingest.Service.FanOut): list it, store its jobs again with the
	// accepted event, mark it.
	due, err := other.EventListNotFannedOut(b.ctx, &event.ListNotFannedOutParams{ReceivedBefore: baseTime().Add(time.Hour), Limit: 10})
	require.NoError(t, err)
	require.Len(t, due, 1)
	require.Equal(t, item.Event.ID, due[0].ID)
	again := make([]*dispatch.Job, len(item.Jobs))
	for i, j := range item.Jobs {
		c := *j
		c.Status = dispatch.StatusPending // a re-fan's job would differ: the stored one stays
		again[i] = &c
	}
	require.NoError(t, other.JobInsertMany(b.ctx, &dispatch.JobInsertManyParams{Jobs: again, Events: item.StatusEvents[:1]}))
	require.NoError(t, other.EventMarkFannedOut(b.ctx, []string{item.Event.ID}, baseTime()))

	jobs, err := other.JobListByEvent(b.ctx, item.Event.ID)
	require.NoError(t, err)
	require.Len(t, jobs, len(item.Jobs), "the re-fan stores no second job")
	for _, j := range item.Jobs {
		stored, err := other.JobGetByID(b.ctx, j.ID)
		require.NoError(t, err)
		require.Equal(t, j, stored, "the ingested job is left as it was")
	}
	for _, e := range item.StatusEvents {
		events, err := other.StatusEventListBySubject(b.ctx, e.Subject)
		require.NoError(t, err)
		require.Equal(t, []stream.Event{e}, events, "each status event is stored once")
	}
	due, err = other.EventListNotFannedOut(b.ctx, &event.ListNotFannedOutParams{ReceivedBefore: baseTime().Add(time.Hour), Limit: 10})
	require.NoError(t, err)
	require.Empty(t, due)

	// The ingesting instance writes its waiting marks before it lists
	// the events not fanned out.
	second := b.ingestItem()
	_, err = s.EventIngest(b.ctx, &dispatch.EventIngestParams{Items: []dispatch.EventIngestItem{second}})
	require.NoError(t, err)
	due, err = s.EventListNotFannedOut(b.ctx, &event.ListNotFannedOutParams{ReceivedBefore: baseTime().Add(time.Hour), Limit: 10})
	require.NoError(t, err)
	require.Empty(t, due)
	got, err = other.EventGetByID(b.ctx, second.Event.ID)
	require.NoError(t, err)
	require.NotNil(t, got.FannedOutAt, "the list wrote the waiting mark")
}

// TestFanOutMarksLandWithoutAReader: the status relay's rounds write the
// waiting marks by themselves (well inside the recovery poller's grace),
// and Close writes those still waiting.
func TestFanOutMarksLandWithoutAReader(t *testing.T) {
	t.Parallel()
	for _, hold := range []bool{false, true} {
		t.Run(map[bool]string{false: "StatusEventsApart", true: "HoldingStatusEvents"}[hold], func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			db := b.env.newDatabase(t)
			reader := b.env.open(t, db, nil)

			relaying := b.env.open(t, db, func(cfg *mongostore.Config) { cfg.StatusRelayInterval = 10 * time.Millisecond })
			relaying.SetHoldStatusEvents(hold)
			item := b.ingestItem()
			_, err := relaying.EventIngest(b.ctx, &dispatch.EventIngestParams{Items: []dispatch.EventIngestItem{item}})
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				got, err := reader.EventGetByID(b.ctx, item.Event.ID)
				return err == nil && got.FannedOutAt != nil
			}, 30*time.Second, 5*time.Millisecond, "a relay round writes the mark")

			idle := b.env.open(t, db, func(cfg *mongostore.Config) { cfg.StatusRelayInterval = relayIdle })
			idle.SetHoldStatusEvents(hold)
			item = b.ingestItem()
			_, err = idle.EventIngest(b.ctx, &dispatch.EventIngestParams{Items: []dispatch.EventIngestItem{item}})
			require.NoError(t, err)
			require.NoError(t, idle.Close())
			got, err := reader.EventGetByID(b.ctx, item.Event.ID)
			require.NoError(t, err)
			require.NotNil(t, got.FannedOutAt, "Close writes the waiting marks")
		})
	}
}

// TestListSeesAMarkWrittenWhileItRead: a relay round that writes an
// event's waiting mark after a list's find read the event unmarked, and
// drops it from the waiting set before the list looks there, leaves the
// mark in neither place; the list reads the event again and sees it
// marked (an ingested event never lists as not fanned out in its own
// process).
func TestListSeesAMarkWrittenWhileItRead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.env.open(t, b.env.newDatabase(t), func(cfg *mongostore.Config) { cfg.StatusRelayInterval = relayIdle })
	item := b.ingestItem()
	_, err := s.EventIngest(b.ctx, &dispatch.EventIngestParams{Items: []dispatch.EventIngestItem{item}})
	require.NoError(t, err)
	got, err := s.ListWithMarkWrittenMidRead(b.ctx, item.Event.ID)
	require.NoError(t, err)
	require.NotNil(t, got.FannedOutAt, "the mark written between the read and the look-up is seen")
}
