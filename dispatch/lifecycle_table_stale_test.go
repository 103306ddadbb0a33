package dispatch_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/stream"
)

// The stale and edge tables of TestLifecycleVerbTable.

// movedOn returns the job another writer made of the caller's copy c (QUEUED,
// or IN_PROGRESS claimed by w1 for attempt 2) by moving it to st:
//
//	from QUEUED:      PENDING    parked by another router
//	                  QUEUED     written again (a late record, a re-send)
//	                  IN_PROGRESS claimed by w2 for attempt 2
//	                  COMPLETED  claimed and delivered by w2
//	                  ERROR      discarded: max age passed
//	                  CANCELLED  cancelled by an operator
//	from IN_PROGRESS: PENDING    w1's lease expired: rescued (attempt 2 ABANDONED), retry due in 6 s
//	                  QUEUED     rescued, then queued again
//	                  IN_PROGRESS rescued, queued, claimed by w2 for attempt 3
//	                  COMPLETED  rescued, queued, claimed and delivered by w2
//	                  ERROR      rescued with no retry left
//	                  CANCELLED  cancelled by an operator while attempt 2 ran (ABANDONED until its outcome comes)
func movedOn(c *dispatch.Job, st dispatch.Status) *dispatch.Job {
	now := tableNow()
	j := *c
	j.Attempts = slices.Clone(c.Attempts)
	j.Status = st
	j.UpdatedAt = now.Add(fixtureAhead + time.Millisecond)
	j.Worker, j.LeaseExpiresAt, j.NextAttemptAt, j.CompletedAt = "", nil, nil, nil
	pull := c.Delivery == dispatch.DeliveryPull
	if c.Status == dispatch.StatusInProgress {
		j.Attempts = append(j.Attempts, abandoned(2, holder))
	}
	claimedBy := func(n int) {
		j.AttemptCount, j.Worker = n, other
		lease := now.Add(time.Minute)
		j.LeaseExpiresAt = &lease
		if pull {
			j.Attempts = append(j.Attempts, pullEntry(n, dispatch.ActionPicked, other))
		}
	}
	deliveredBy := func(n int) {
		j.AttemptCount, j.LastError = n, nil
		done := j.UpdatedAt
		j.CompletedAt = &done
		if pull {
			j.Attempts = append(j.Attempts, pullEntry(n, dispatch.ActionPicked, other), pullEntry(n, dispatch.ActionCompleted, other))
		} else {
			j.Attempts = append(j.Attempts, pushAttempt(n, 200, other))
		}
	}
	switch st {
	case dispatch.StatusPending:
		due := now.Add(time.Minute)
		if c.Status == dispatch.StatusInProgress {
			due = now.Add(waitAfter2)
		}
		j.NextAttemptAt = &due
	case dispatch.StatusInProgress:
		claimedBy(c.AttemptCount + 1)
	case dispatch.StatusCompleted:
		deliveredBy(c.AttemptCount + 1)
	case dispatch.StatusError:
		msg := "max age passed before delivery"
		j.LastError = &msg
	case dispatch.StatusQueued, dispatch.StatusCancelled:
	}
	return &j
}

// storeStale returns a row setup that stores the caller's copy atRest(from)
// and has another writer move it with move before the verb runs.
func storeStale(from dispatch.Status, pull bool, move func(c *dispatch.Job) *dispatch.Job) func(t *testing.T, e *tableEnv) (*dispatch.Job, []string) {
	return func(t *testing.T, e *tableEnv) (*dispatch.Job, []string) {
		t.Helper()
		c, preIDs := storeAtRest(from, pull, false)(t, e)
		moved := move(c)
		pre := arrival(moved)
		require.NoError(t, e.st.JobUpdate(t.Context(), &dispatch.JobUpdateParams{Job: moved, Events: []stream.Event{pre}}))
		return c, append(preIDs, pre.ID)
	}
}

// staleRows are the verbs that act on a copy the caller read, run after
// another writer moved the job to each status.
func staleRows() []tableRow {
	type staleVerb struct {
		name string
		from dispatch.Status
		pull bool
		run  func(ctx context.Context, e *tableEnv, j *dispatch.Job) error
		want func(st dispatch.Status) effect
	}
	const (
		pending    = dispatch.StatusPending
		queued     = dispatch.StatusQueued
		inProgress = dispatch.StatusInProgress
		completed  = dispatch.StatusCompleted
	)
	lost := func(dispatch.Status) effect { return nothing(dispatch.ErrClaimLost) }
	none := func(dispatch.Status) effect { return nothing(nil) }
	// A late outcome of w1's attempt 2 is recorded in its place (over the
	// ABANDONED entry of a rescue), the status the other writer set kept;
	// when another claim holds the job, the outcome is ErrLeaseLost.
	late := func(code string) func(st dispatch.Status) effect {
		return func(st dispatch.Status) effect {
			switch st {
			case inProgress:
				return nothing(dispatch.ErrLeaseLost)
			case completed:
				return effect{status: st, attempts: []string{"1:503", "2:" + code, "3:200"}}
			case pending:
				return effect{status: st, attempts: []string{"1:503", "2:" + code}, keepNext: true}
			default:
				return effect{status: st, attempts: []string{"1:503", "2:" + code}}
			}
		}
	}
	stale := []staleVerb{
		{"Claim push", queued, false, claim(false), lost},
		{"Claim pull", queued, true, claim(true), lost},
		{"Park", queued, false, park, none},
		{"ParkPaused", queued, false, parkPaused, none},
		// Send trusts the caller's QUEUED copy; the router drops a message
		// whose job moved on.
		{"Send", queued, false, send, func(dispatch.Status) effect { return effect{unchanged: true, sent: 1} }},
		{"RecordOutcome success", inProgress, false, record(succeeded()), late("200")},
		{"RecordOutcome retryable", inProgress, false, record(retryable()), late("503")},
		{"RecordOutcome permanent", inProgress, false, record(permanent()), late("410")},
		{"RecordOutcome not attempted", inProgress, false, record(notAttempted()), func(st dispatch.Status) effect {
			if st == inProgress {
				return nothing(dispatch.ErrLeaseLost)
			}
			return nothing(nil)
		}},
		{"HandBack", inProgress, false, handBack, none},
	}
	var rows []tableRow
	for _, v := range stale {
		for _, st := range dispatch.Statuses() {
			rows = append(rows, tableRow{
				name: v.name + " of a " + string(v.from) + " copy, moved to " + string(st),
				run:  v.run, want: v.want(st),
				setup: storeStale(v.from, v.pull, func(c *dispatch.Job) *dispatch.Job { return movedOn(c, st) }),
			})
		}
	}
	return rows
}

// storeModified returns a row setup storing atRest(st) changed by mod.
func storeModified(st dispatch.Status, pull bool, mod func(j *dispatch.Job)) func(t *testing.T, e *tableEnv) (*dispatch.Job, []string) {
	return func(t *testing.T, e *tableEnv) (*dispatch.Job, []string) {
		t.Helper()
		id := e.ids.New()
		j := atRest(id, "sub-"+id, st, pull, false)
		mod(j)
		pre := arrival(j)
		require.NoError(t, e.st.JobInsertMany(t.Context(), &dispatch.JobInsertManyParams{
			Jobs: []*dispatch.Job{j}, Events: []stream.Event{pre},
		}))
		stored, err := e.st.JobGetByID(t.Context(), id)
		require.NoError(t, err)
		return stored, []string{pre.ID}
	}
}

// edgeRows are the decisions within one verb: max attempts, max age,
// Retry-After, who may report.
func edgeRows() []tableRow {
	now := tableNow()
	expired := func(j *dispatch.Job) { j.CreatedAt = now.Add(-2 * time.Hour) }
	lastAttempt := func(j *dispatch.Job) {
		j.AttemptCount = 3
		if j.Delivery == dispatch.DeliveryPull {
			j.Attempts = append(j.Attempts, pullEntry(2, dispatch.ActionFailed, holder), pullEntry(3, dispatch.ActionPicked, holder))
			return
		}
		j.Attempts = append(j.Attempts, pushAttempt(2, 503, holder))
	}
	discarded := []string{stream.TypeDispatchFailed, stream.TypeDispatchDiscarded}
	maxAge := func(t *testing.T, _, after *dispatch.Job) {
		t.Helper()
		require.NotNil(t, after.LastError)
		require.Equal(t, "max age passed before delivery", *after.LastError)
	}
	return []tableRow{
		{
			name: "Claim push of a job past its max age", run: claim(false),
			setup: storeModified(dispatch.StatusQueued, false, expired),
			want: effect{
				err: dispatch.ErrExpired, status: dispatch.StatusError, events: []string{stream.TypeDispatchDiscarded},
				attempts: []string{"1:503"}, check: maxAge,
			},
		},
		{
			name: "Claim pull of a job past its max age", run: claim(true),
			setup: storeModified(dispatch.StatusQueued, true, expired),
			want: effect{
				err: dispatch.ErrExpired, status: dispatch.StatusError, events: []string{stream.TypeDispatchDiscarded},
				attempts: []string{"1 PICKED w1", "1 FAILED w1:500"}, check: maxAge,
			},
		},
		{
			name: "RescueStale of a job past its max age", global: true,
			run: func(ctx context.Context, e *tableEnv, _ *dispatch.Job) error {
				_, _, err := e.lc.RescueStale(ctx, dispatch.RescueParams{Before: now.Add(time.Minute), Limit: 10})
				return err
			},
			setup: storeModified(dispatch.StatusQueued, false, expired),
			want: effect{
				status: dispatch.StatusError, events: []string{stream.TypeDispatchDiscarded}, attempts: []string{"1:503"}, check: maxAge,
			},
		},
		{
			name: "RecordOutcome retryable of the last attempt", run: record(retryable()),
			setup: storeModified(dispatch.StatusInProgress, false, lastAttempt),
			want:  effect{status: dispatch.StatusError, events: discarded, attempts: []string{"1:503", "2:503", "3:503"}},
		},
		{
			name: "RecordOutcome retryable whose retry would pass the max age", run: record(retryable()),
			setup: storeModified(dispatch.StatusInProgress, false, func(j *dispatch.Job) {
				j.CreatedAt = now.Add(-time.Hour + waitAfter2/2) // the max age passes in 3 s, the retry is due in 6
			}),
			want: effect{status: dispatch.StatusError, events: discarded, attempts: []string{"1:503", "2:503"}},
		},
		{
			name: "RecordOutcome retryable of the first attempt", run: record(retryable()),
			setup: storeModified(dispatch.StatusInProgress, false, func(j *dispatch.Job) {
				j.AttemptCount, j.Attempts = 1, []dispatch.Attempt{}
			}),
			want: effect{status: dispatch.StatusPending, events: []string{stream.TypeDispatchFailed}, attempts: []string{"1:503"}, next: waitAfter1},
		},
		{
			name: "RecordOutcome retryable with a Retry-After", run: record(dispatch.Outcome{
				Attempted: true, Attempt: dispatch.Attempt{StatusCode: 429},
				Err: dispatch.RetryAfter(40*time.Second, errors.New("429 Too Many Requests")),
			}),
			setup: storeAtRest(dispatch.StatusInProgress, false, false),
			want: effect{
				status: dispatch.StatusPending, events: []string{stream.TypeDispatchFailed},
				attempts: []string{"1:503", "2:429"}, next: 40 * time.Second,
			},
		},
		{
			name: "RescueExpired of the last attempt", global: true,
			run: func(ctx context.Context, e *tableEnv, _ *dispatch.Job) error {
				_, _, err := e.lc.RescueExpired(ctx, dispatch.RescueParams{Before: now, Limit: 10})
				return err
			},
			setup: storeModified(dispatch.StatusInProgress, false, lastAttempt),
			want:  effect{status: dispatch.StatusError, events: discarded, attempts: []string{"1:503", "2:503", "3 ABANDONED w1"}},
		},
		{
			name: "Report fail of the last attempt", run: report(holder, dispatch.ActionFailed),
			setup: storeModified(dispatch.StatusInProgress, true, lastAttempt),
			want: effect{status: dispatch.StatusError, events: discarded, attempts: []string{
				"1 PICKED w1", "1 FAILED w1:500", "2 PICKED w1", "2 FAILED w1:500", "3 PICKED w1", "3 FAILED w1:500",
			}},
		},
		{
			name: "Heartbeat by another worker",
			run: func(ctx context.Context, e *tableEnv, j *dispatch.Job) error {
				_, err := e.lc.Heartbeat(ctx, j.ID, other, tableHeartbeat)
				return err
			},
			setup: storeAtRest(dispatch.StatusInProgress, true, false),
			want:  nothing(dispatch.ErrNotHolder),
		},
		{
			name: "RecordOutcome success of a copy whose claim only heartbeated since", run: record(succeeded()),
			setup: storeStale(dispatch.StatusInProgress, false, func(c *dispatch.Job) *dispatch.Job {
				j := *c
				lease := now.Add(time.Minute)
				j.LeaseExpiresAt, j.UpdatedAt = &lease, now.Add(fixtureAhead+time.Millisecond)
				return &j
			}),
			want: effect{status: dispatch.StatusCompleted, events: []string{stream.TypeDispatchCompleted}, attempts: []string{"1:503", "2:200"}},
		},
		{
			// The same router (worker id) claimed the job again after its
			// lease expired: the late outcome of attempt 2 is not the outcome
			// of the claim of attempt 3.
			name: "RecordOutcome success of a copy whose worker claimed the job again since", run: record(succeeded()),
			setup: storeStale(dispatch.StatusInProgress, false, func(c *dispatch.Job) *dispatch.Job {
				j := movedOn(c, dispatch.StatusInProgress)
				j.Worker = holder
				return j
			}),
			want: nothing(dispatch.ErrLeaseLost),
		},
	}
}
