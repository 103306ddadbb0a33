package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/hooklane/hooklane/queue"
	"github.com/hooklane/hooklane/stream"
)

// EnqueuerStore is what the Enqueuer needs of the store.
type EnqueuerStore interface {
	JobUpdate(ctx context.Context, p *JobUpdateParams) error
}

// Enqueuer puts QUEUED jobs on the queue. The store stays the source of
// truth: a job whose send fails goes back to PENDING (due at once), so the
// pending poller sends it again; if even that write fails, the stale-queued
// poller finds the job later. Nothing is lost either way.
type Enqueuer struct {
	Queue   queue.Queue
	Store   EnqueuerStore
	NewID   func() string
	NowFunc func() time.Time
	Logger  *slog.Logger
}

// Message returns the queue message for a QUEUED job. The dedup id includes
// the job's version, so a legitimate re-queue (a retry, a reset by a poller)
// is never swallowed by the queue's deduplication, while a resend of the
// same queuing is.
func Message(j *Job) queue.OutMessage {
	return queue.OutMessage{
		Group:   j.QueueGroup(),
		DedupID: j.ID + "-" + strconv.FormatInt(j.Version, 10),
		Body:    []byte(j.ID),
	}
}

// Enqueue sends the jobs, which must be stored and QUEUED, in batches of
// queue.MaxBatch, in the order given (group order must be preserved by the
// caller's ordering). It returns the number of jobs it had to move back to
// PENDING. The error is non-nil only when the store refused those moves.
func (e *Enqueuer) Enqueue(ctx context.Context, jobs []*Job) (int, error) {
	var failed []*Job
	for start := 0; start < len(jobs); start += queue.MaxBatch {
		batch := jobs[start:min(start+queue.MaxBatch, len(jobs))]
		msgs := make([]queue.OutMessage, len(batch))
		for i, j := range batch {
			msgs[i] = Message(j)
		}
		results, err := e.Queue.SendBatch(ctx, msgs)
		if err != nil {
			e.Logger.WarnContext(ctx, "queue send failed", "jobs", len(batch), "error", err)
			failed = append(failed, batch...)
			continue
		}
		for i, r := range results {
			if r.Err != nil {
				e.Logger.WarnContext(ctx, "queue send entry failed", "job_id", batch[i].ID, "error", r.Err)
				failed = append(failed, batch[i])
			}
		}
	}
	var errs []error
	for _, j := range failed {
		if err := e.backToPending(ctx, j); err != nil {
			errs = append(errs, err)
		}
	}
	return len(failed), errors.Join(errs...)
}

// backToPending moves a job whose send failed from QUEUED to PENDING, due
// at once. A job that moved on meanwhile is left alone.
func (e *Enqueuer) backToPending(ctx context.Context, j *Job) error {
	now := e.NowFunc()
	if err := j.Transition(StatusPending, now); err != nil {
		return nil //nolint:nilerr // the job moved on; nothing to undo
	}
	due := now
	j.NextAttemptAt = &due
	ev := j.StatusEvent(e.NewID(), stream.TypeDispatchPending, now)
	ev.Data.Error = "queue send failed"
	if err := e.Store.JobUpdate(ctx, &JobUpdateParams{Job: j, Events: []stream.Event{ev}}); err != nil {
		return fmt.Errorf("return job %s to pending: %w", j.ID, err)
	}
	return nil
}
