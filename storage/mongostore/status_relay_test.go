package mongostore_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/storage/mongostore"
	"github.com/hooklane/hooklane/stream"
)

// relayIdle is a relay interval no test waits out: the relay then moves
// events only in its first round and when a read flushes it.
const relayIdle = time.Hour

// heldStatusEvents returns the ids of the status events job id of database
// db holds in its document, read past the adapter.
func heldStatusEvents(t *testing.T, b *testBundle, db, id string) []string {
	t.Helper()
	var doc struct {
		Outbox []struct {
			ID string `bson:"_id"`
		} `bson:"statusOutbox"`
		Pending string `bson:"statusOutboxPending"`
	}
	require.NoError(t, b.env.admin.Database(db).Collection("jobs").FindOne(b.ctx, bson.D{{Key: "_id", Value: id}}).Decode(&doc))
	ids := make([]string, len(doc.Outbox))
	for i := range doc.Outbox {
		ids[i] = doc.Outbox[i].ID
	}
	require.Equal(t, len(ids) > 0, doc.Pending == "pending", "the marker is set exactly while events are held")
	return ids
}

// relayedStatusEvents returns the ids of the status events in the
// statusEvents collection of db about subject, read past the adapter (no
// flush).
func relayedStatusEvents(t *testing.T, b *testBundle, db, subject string) []string {
	t.Helper()
	cur, err := b.env.admin.Database(db).Collection("statusEvents").Find(b.ctx, bson.D{{Key: "subject", Value: subject}})
	require.NoError(t, err)
	var docs []struct {
		ID string `bson:"_id"`
	}
	require.NoError(t, cur.All(b.ctx, &docs))
	ids := make([]string, len(docs))
	for i := range docs {
		ids[i] = docs[i].ID
	}
	return ids
}

func statusEventIDs(events []stream.Event) []string {
	ids := make([]string, len(events))
	for i := range events {
		ids[i] = events[i].ID
	}
	return ids
}

// A job write stores its status events in the job's own document (one
// write, no crash window between the job and its history); several writes
// before a relay round keep every one's, on both write paths; the history
// read flushes the relay, so it lists them at once; the relay clears what
// it moved.
func TestStatusEventsHeldByTheJobWrite(t *testing.T) {
	t.Parallel()
	for _, guards := range []bool{false, true} {
		name := "filtered_update"
		if guards {
			name = "write_guards"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			db := b.env.newDatabase(t)
			s := b.env.open(t, db, func(cfg *mongostore.Config) { cfg.StatusRelayInterval = relayIdle })
			s.SetWriteGuards(guards)
			s.SetHoldStatusEvents(true)

			job := b.newJob("")
			created := job.StatusEvent(b.ids.New(), stream.TypeDispatchQueued, baseTime())
			require.NoError(t, s.JobInsertMany(b.ctx, &dispatch.JobInsertManyParams{Jobs: []*dispatch.Job{job}, Events: []stream.Event{created}}))
			require.Equal(t, []string{created.ID}, heldStatusEvents(t, b, db, job.ID))
			require.Empty(t, relayedStatusEvents(t, b, db, job.ID))

			var want []string
			want = append(want, created.ID)
			for i := 1; i <= 2; i++ {
				job.AttemptCount = i
				job.UpdatedAt = baseTime().Add(time.Duration(i) * time.Second)
				e := job.StatusEvent(b.ids.New(), stream.TypeDispatchStarted, baseTime().Add(time.Duration(i)*time.Second))
				require.NoError(t, s.JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: job, Events: []stream.Event{e}}))
				want = append(want, e.ID)
			}
			require.Equal(t, want, heldStatusEvents(t, b, db, job.ID), "each write keeps the events held before it")
			got, err := s.JobGetByID(b.ctx, job.ID)
			require.NoError(t, err)
			require.Equal(t, job, got, "the held events change nothing of the job")

			history, err := s.StatusEventListBySubject(b.ctx, job.ID)
			require.NoError(t, err)
			require.Equal(t, want, statusEventIDs(history), "the history read lists the held events")
			require.Empty(t, heldStatusEvents(t, b, db, job.ID), "relayed, so cleared")
			require.ElementsMatch(t, want, relayedStatusEvents(t, b, db, job.ID))

			// The next write holds only its own.
			require.NoError(t, job.Transition(dispatch.StatusError, baseTime().Add(5*time.Second)))
			done := job.StatusEvent(b.ids.New(), stream.TypeDispatchCompleted, baseTime().Add(5*time.Second))
			require.NoError(t, s.JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: job, Events: []stream.Event{done}}))
			require.Equal(t, []string{done.ID}, heldStatusEvents(t, b, db, job.ID))
			got, err = s.JobGetByID(b.ctx, job.ID)
			require.NoError(t, err)
			require.Equal(t, job, got)
		})
	}
}

// The relay runs by itself: events reach statusEvents (what the stream
// tails, without a flush) soon after the write, well inside the tailer's
// settle delay; and held events a stopped process left are moved by the
// next one to open the store.
func TestStatusRelayMovesEventsByItself(t *testing.T) {
	t.Parallel()
	b := setup(t)
	db := b.env.newDatabase(t)

	left := b.env.open(t, db, func(cfg *mongostore.Config) { cfg.StatusRelayInterval = relayIdle })
	left.SetHoldStatusEvents(true)
	orphan := b.newJob("")
	orphanEvent := orphan.StatusEvent(b.ids.New(), stream.TypeDispatchQueued, baseTime())
	require.NoError(t, left.JobInsertMany(b.ctx, &dispatch.JobInsertManyParams{Jobs: []*dispatch.Job{orphan}, Events: []stream.Event{orphanEvent}}))
	require.NoError(t, left.Close())
	require.Equal(t, []string{orphanEvent.ID}, heldStatusEvents(t, b, db, orphan.ID))

	s := b.env.open(t, db, func(cfg *mongostore.Config) { cfg.StatusRelayInterval = 10 * time.Millisecond })
	s.SetHoldStatusEvents(true)
	require.Equal(t, []string{orphanEvent.ID}, relayedStatusEvents(t, b, db, orphan.ID), "the next process relays what the stopped one held as it opens")

	job := b.newJob("")
	require.NoError(t, s.JobInsertMany(b.ctx, &dispatch.JobInsertManyParams{Jobs: []*dispatch.Job{job}}))
	require.NoError(t, job.Transition(dispatch.StatusInProgress, baseTime().Add(time.Second)))
	started := job.StatusEvent(b.ids.New(), stream.TypeDispatchStarted, baseTime().Add(time.Second))
	require.NoError(t, s.JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: job, Events: []stream.Event{started}}))
	require.Eventually(t, func() bool {
		return len(relayedStatusEvents(t, b, db, job.ID)) == 1
	}, 10*time.Second, 10*time.Millisecond, "a write kicks the relay")
	require.Eventually(t, func() bool { return len(heldStatusEvents(t, b, db, job.ID)) == 0 },
		10*time.Second, 10*time.Millisecond)
}

// Several instances relay at once, while the jobs are written: every
// status event is stored exactly once (ids are unique, a second insert is
// ignored) and no job write is undone by a relay's clear.
func TestStatusRelayOfSeveralInstances(t *testing.T) {
	t.Parallel()
	b := setup(t)
	db := b.env.newDatabase(t)
	fast := func(cfg *mongostore.Config) { cfg.StatusRelayInterval = time.Millisecond }
	stores := []*mongostore.Store{b.env.open(t, db, fast), b.env.open(t, db, fast), b.env.open(t, db, fast)}
	for _, s := range stores {
		s.SetHoldStatusEvents(true)
	}

	const jobs, writes = 6, 4
	var wg sync.WaitGroup
	want := make([][]string, jobs)
	final := make([]*dispatch.Job, jobs)
	errs := make(chan error, jobs)
	for n := range jobs {
		job := b.newJob("")
		final[n] = job
		wg.Go(func() {
			s := stores[n%len(stores)]
			if err := s.JobInsertMany(b.ctx, &dispatch.JobInsertManyParams{Jobs: []*dispatch.Job{job}}); err != nil {
				errs <- err
				return
			}
			for i := 1; i <= writes; i++ {
				at := baseTime().Add(time.Duration(i) * time.Second)
				job.AttemptCount = i
				job.UpdatedAt = at
				e := job.StatusEvent(b.ids.New(), stream.TypeDispatchStarted, at)
				// The writer of each step is another instance.
				if err := stores[(n+i)%len(stores)].JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: job, Events: []stream.Event{e}}); err != nil {
					errs <- err
					return
				}
				want[n] = append(want[n], e.ID)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for n, job := range final {
		got, err := stores[0].JobGetByID(b.ctx, job.ID)
		require.NoError(t, err)
		require.Equal(t, job, got, "no write undone")
		history, err := stores[n%len(stores)].StatusEventListBySubject(b.ctx, job.ID)
		require.NoError(t, err)
		require.Equal(t, want[n], statusEventIDs(history), "each event once, in order")
	}
}
