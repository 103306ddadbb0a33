package dispatch_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/queue/memqueue"
	"github.com/hooklane/hooklane/storage/sqlitestore"
)

// groupReadsFail is the real store whose reads of a message group fail
// while fail is set, as a store slow past its caller's deadline does.
type groupReadsFail struct {
	*sqlitestore.Store
	fail atomic.Bool
}

var errGroupRead = errors.New("group read: context deadline exceeded")

func (s *groupReadsFail) JobListGroup(ctx context.Context, p *dispatch.JobListGroupParams) ([]*dispatch.Job, error) {
	if s.fail.Load() {
		return nil, errGroupRead
	}
	return s.Store.JobListGroup(ctx, p)
}

// newBlockedGroup opens a lifecycle on a real store seen through wrap and
// a BLOCK_ON_ERROR group of two jobs: the head claimed, the other parked
// behind it (it reached a router while the head was being delivered),
// the messages of their first sends taken off the queue.
func newBlockedGroup(t *testing.T, wrap func(*sqlitestore.Store) dispatch.LifecycleStore) (e *releaseEnv, head, held *dispatch.Job) {
	t.Helper()
	ctx := context.Background()
	sq, err := sqlitestore.Open(ctx, sqlitestore.Config{Path: filepath.Join(t.TempDir(), "r.db")})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sq.Close()) })
	q := memqueue.New(memqueue.Config{})
	t.Cleanup(func() { require.NoError(t, q.Close()) })
	ids := idgen.New(nil)
	lc := dispatch.NewLifecycle(dispatch.LifecycleConfig{
		Store: wrap(sq), Queue: q, NewID: ids.New, Logger: slog.New(slog.DiscardHandler), BlockedRecheck: time.Hour,
	})
	e = &releaseEnv{st: sq, q: q, ids: ids, rel: lc}
	head = e.job(t, "s1", "g", dispatch.StatusQueued, "")
	held = e.job(t, "s1", "g", dispatch.StatusQueued, "")
	require.NoError(t, lc.Claim(ctx, head, dispatch.ClaimParams{Worker: "w", Lease: time.Minute}))
	wait, err := lc.HoldForOrder(ctx, held)
	require.NoError(t, err)
	require.True(t, wait)
	require.Equal(t, dispatch.StatusPending, e.job1(t, held.ID).Status)
	require.Equal(t, head.ID, e.job1(t, held.ID).BlockedBy)
	e.received(t)
	return e, head, held
}

// A blocker's completion whose release fails does not leave the jobs
// parked behind it for the blocked recheck: the pending poller's next
// round releases the group.
func TestFailedReleaseIsRetriedByQueueDue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := &groupReadsFail{}
	e, head, held := newBlockedGroup(t, func(sq *sqlitestore.Store) dispatch.LifecycleStore { st.Store = sq; return st })
	lc := e.rel

	// The head completes; its release cannot read the group.
	st.fail.Store(true)
	done, err := lc.RecordOutcome(ctx, head, dispatch.Outcome{Attempted: true, Attempt: dispatch.Attempt{StatusCode: 204}})
	require.NoError(t, err, "the outcome is recorded whatever became of the release")
	require.Equal(t, dispatch.StatusCompleted, done.Status)
	require.Equal(t, dispatch.StatusPending, e.job1(t, held.ID).Status, "the release failed")

	// A round while the store still fails keeps the group for the next.
	_, _, err = lc.QueueDue(ctx, dispatch.QueueDueParams{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, dispatch.StatusPending, e.job1(t, held.ID).Status)

	st.fail.Store(false)
	_, _, err = lc.QueueDue(ctx, dispatch.QueueDueParams{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, dispatch.StatusQueued, e.job1(t, held.ID).Status, "the pending poller's round released the group")
	require.Equal(t, []string{held.ID}, e.received(t))

	// Released once: a later round has nothing left to release.
	_, _, err = lc.QueueDue(ctx, dispatch.QueueDueParams{Limit: 10})
	require.NoError(t, err)
	require.Empty(t, e.received(t))
}

func (e *releaseEnv) job1(t *testing.T, id string) *dispatch.Job {
	t.Helper()
	j, err := e.st.JobGetByID(context.Background(), id)
	require.NoError(t, err)
	return j
}

// queueWritesLandButFail is the real store whose job writes to QUEUED
// commit and then fail while fail is set, as MongoDB's do when the
// caller's deadline passes on the wire.
type queueWritesLandButFail struct {
	*sqlitestore.Store
	fail atomic.Bool
}

func (s *queueWritesLandButFail) JobUpdate(ctx context.Context, p *dispatch.JobUpdateParams) error {
	err := s.Store.JobUpdate(ctx, p)
	if err == nil && s.fail.Load() && p.Job.Status == dispatch.StatusQueued {
		return context.DeadlineExceeded
	}
	return err
}

// A release whose write landed though it was told it failed moved the job
// to QUEUED and sent nothing: the pending poller's next round sends it,
// instead of leaving the group held by a job without a message for the
// stale-queued rescuer.
func TestReleaseThatLandedUnseenIsSentByQueueDue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := &queueWritesLandButFail{}
	e, head, held := newBlockedGroup(t, func(sq *sqlitestore.Store) dispatch.LifecycleStore { st.Store = sq; return st })
	lc := e.rel

	st.fail.Store(true)
	_, err := lc.RecordOutcome(ctx, head, dispatch.Outcome{Attempted: true, Attempt: dispatch.Attempt{StatusCode: 204}})
	require.NoError(t, err)
	require.Equal(t, dispatch.StatusQueued, e.job1(t, held.ID).Status, "the release's write landed")
	require.Empty(t, e.received(t), "its caller, told it failed, sent nothing")
	st.fail.Store(false)

	_, _, err = lc.QueueDue(ctx, dispatch.QueueDueParams{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, []string{held.ID}, e.received(t), "the pending poller's round sent the QUEUED job")
	_, _, err = lc.QueueDue(ctx, dispatch.QueueDueParams{Limit: 10})
	require.NoError(t, err)
	require.Empty(t, e.received(t), "once")
}
