package mongostore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/stream"
)

// The job outbox on both paths of JobUpdate: MongoDB's one update filtered
// on id and version (appending the update's outbox events to the held
// ones with $push) and FerretDB's write guard (read, then replace).
// storetest's JobOutbox case covers the server's own path; this one forces
// each.
func TestJobOutboxOnBothWritePaths(t *testing.T) {
	t.Parallel()
	for _, guards := range []bool{false, true} {
		name := "filtered_replace"
		if guards {
			name = "write_guards"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			s := b.env.open(t, b.env.newDatabase(t), nil)
			s.SetWriteGuards(guards)
			list := func() []string {
				t.Helper()
				got, err := s.OutboxList(b.ctx, 10)
				require.NoError(t, err)
				ids := make([]string, len(got))
				for i := range got {
					ids[i] = got[i].ID
				}
				return ids
			}
			discarded := func(j *dispatch.Job) stream.Event {
				return stream.Event{
					ID: b.ids.New(), Type: stream.TypeDispatchDiscarded, Time: baseTime(), Subject: j.ID,
					Data: stream.Data{JobID: j.ID, Error: "max age passed before delivery"},
				}
			}

			job := b.newJob("")
			require.NoError(t, s.JobInsertMany(b.ctx, &dispatch.JobInsertManyParams{Jobs: []*dispatch.Job{job}}))
			stale := *job
			require.NoError(t, job.Transition(dispatch.StatusError, baseTime().Add(time.Second)))
			d1 := discarded(job)
			require.NoError(t, s.JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: job, Events: []stream.Event{d1}, Outbox: []stream.Event{d1}}))
			require.Equal(t, []string{d1.ID}, list())

			lost := discarded(&stale)
			require.ErrorIs(t, s.JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: &stale, Outbox: []stream.Event{lost}}), store.ErrConflict)
			require.Equal(t, []string{d1.ID}, list(), "a refused update stores no outbox event")

			// Two later writes: the first carries the event not relayed,
			// the second one of its own; both are kept.
			require.NoError(t, job.Transition(dispatch.StatusQueued, baseTime().Add(2*time.Second)))
			require.NoError(t, s.JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: job}))
			require.NoError(t, job.Transition(dispatch.StatusError, baseTime().Add(3*time.Second)))
			d2 := discarded(job)
			require.NoError(t, s.JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: job, Outbox: []stream.Event{d2}}))
			require.Equal(t, []string{d1.ID, d2.ID}, list())
			require.ErrorIs(t, s.JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: &stale}), store.ErrConflict)

			require.NoError(t, s.OutboxDelete(b.ctx, []string{d1.ID}))
			require.Equal(t, []string{d2.ID}, list())
			require.NoError(t, s.OutboxDelete(b.ctx, []string{d2.ID}))
			require.Empty(t, list())
			// With the outbox gone, the next write is the one-replace path
			// again, and the job reads back as written.
			require.NoError(t, job.Transition(dispatch.StatusQueued, baseTime().Add(4*time.Second)))
			require.NoError(t, s.JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: job}))
			require.Equal(t, int64(5), job.Version)
			got, err := s.JobGetByID(b.ctx, job.ID)
			require.NoError(t, err)
			require.Equal(t, job, got)
			require.Empty(t, list())
		})
	}
}
