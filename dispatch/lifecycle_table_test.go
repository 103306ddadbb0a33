package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/clocktest"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/queue"
	"github.com/hooklane/hooklane/queue/memqueue"
	"github.com/hooklane/hooklane/stream"
)

// The lifecycle as a state machine, one verb at a time: every verb from
// every status, on both stores. Each row stores one job at rest in a status
// (with the status event that brought it there), runs one verb on it at a
// fixed instant, and checks the whole effect: the status or the typed error,
// the status events emitted (types, in order, sorting after the job's
// earlier ones), the attempts, AttemptCount, NextAttemptAt, the version
// (bumped exactly once by a write, untouched otherwise) and the messages
// sent to the queue.
//
// Three tables:
//   - fresh: the caller's copy of the job is the stored one;
//   - stale: the caller read the job in the status its verb expects
//     (QUEUED to claim, park or send; IN_PROGRESS, claimed by w1, to record
//     an outcome or hand back), then another writer moved it to the row's
//     status before the verb ran;
//   - edges: the decisions inside one transition (max attempts, max age,
//     Retry-After, another worker's report, a repeated report).

// tableNow is the instant every row runs at.
func tableNow() time.Time { return time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC) }

const (
	// fixtureAhead is how far ahead of the table's clock ran the instance
	// that last wrote each fixture: the events a verb emits must sort after
	// the fixture's all the same (dispatch.Job.StatusEvent).
	fixtureAhead = 50 * time.Millisecond
	// tableLease is the lease of the table's claims, tableHeartbeat the one
	// a heartbeat sets.
	tableLease     = 30 * time.Second
	tableHeartbeat = 45 * time.Second
	// tablePausedRecheck is the lifecycle's PausedRecheck in the table.
	tablePausedRecheck = 2 * time.Minute
	// The waits of the table's retry policy with RandFunc 0.5: d/2 + d/4
	// with d = 4 s × 2^(n−1) after attempt n.
	waitAfter1 = 3 * time.Second
	waitAfter2 = 6 * time.Second
)

// tableRetry is the fixtures' retry policy: 3 attempts, 4 s initial backoff.
func tableRetry() dispatch.Retry {
	return dispatch.Retry{MaxAttempts: 3, InitialBackoffSeconds: 4, MaxBackoffSeconds: 60}
}

// Workers: w1 holds (or last held) every fixture's claim; w2 is another
// worker that moved a stale row's job on; w9 claims in the table.
const (
	holder   = "w1"
	other    = "w2"
	claimant = "w9"
	blocker  = "01BLOCKER0000000000000000"
)

// verbCase is one verb of the table.
type verbCase struct {
	name string
	// pull runs the verb on a pull job; ordered on a BLOCK_ON_ERROR job of
	// a group of its own, parked behind a blocker while PENDING.
	pull, ordered bool
	// global marks a poller verb, which acts on every due job of the store.
	global bool
	run    func(ctx context.Context, e *tableEnv, j *dispatch.Job) error
	// from gives the verb's effect from each status it acts on. From any
	// other status nothing changes and the verb returns otherwise.
	from      map[dispatch.Status]effect
	otherwise error
}

// effect is what a verb does to a job.
type effect struct {
	// err is the error the verb returns (nil: none). A *NotAllowedError is
	// asked with errNotAllowed.
	err error
	// unchanged: the stored job and its events are left exactly as they
	// were. The remaining fields then only say what was sent.
	unchanged bool
	status    dispatch.Status
	// events are the types of the status events emitted, in order.
	events []string
	// attempts is the job's whole audit log after the verb (see
	// attemptsOf); nil when it is unchanged.
	attempts []string
	// count is the change of AttemptCount.
	count int
	// next is NextAttemptAt minus the table's now, for a PENDING result;
	// keepNext keeps the stored value instead.
	next     time.Duration
	keepNext bool
	// sent is how many messages for the job the queue holds after the verb.
	sent int
	// check checks what is particular to the row.
	check func(t *testing.T, before, after *dispatch.Job)
}

// errNotAllowed stands for a *dispatch.NotAllowedError in an effect.
var errNotAllowed = errors.New("a *dispatch.NotAllowedError")

func nothing(err error) effect { return effect{err: err, unchanged: true} }

// tableEnv is one row's world: the store shared by the rows, and a queue,
// clock and lifecycle of the row's own.
type tableEnv struct {
	st  lifecycleStore
	q   *memqueue.Queue
	clk *clocktest.Clock
	ids *idgen.Generator
	lc  *dispatch.Lifecycle
}

func newTableEnv(t *testing.T, st lifecycleStore) *tableEnv {
	t.Helper()
	clk := clocktest.New(tableNow())
	q := memqueue.New(memqueue.Config{NowFunc: clk.Now})
	t.Cleanup(func() { require.NoError(t, q.Close()) })
	ids := idgen.New(clk.Now)
	lc := dispatch.NewLifecycle(dispatch.LifecycleConfig{
		Store: st, Queue: q, NewID: ids.New, NowFunc: clk.Now,
		RandFunc:      func() float64 { return 0.5 },
		PausedRecheck: tablePausedRecheck,
		Logger:        slog.New(slog.NewTextHandler(tLogWriter{t}, nil)),
	})
	return &tableEnv{st: st, q: q, clk: clk, ids: ids, lc: lc}
}

// tLogWriter sends the lifecycle's logs to t.Log.
type tLogWriter struct{ t testing.TB }

func (w tLogWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// Outcomes of a push attempt the table records.
func succeeded() dispatch.Outcome {
	return dispatch.Outcome{Attempted: true, Attempt: dispatch.Attempt{DurationMs: 12, StatusCode: 200}}
}

func retryable() dispatch.Outcome {
	return dispatch.Outcome{
		Attempted: true, Attempt: dispatch.Attempt{DurationMs: 12, StatusCode: 503},
		Err: errors.New("503 Service Unavailable"),
	}
}

func permanent() dispatch.Outcome {
	return dispatch.Outcome{
		Attempted: true, Attempt: dispatch.Attempt{DurationMs: 12, StatusCode: 410},
		Err: dispatch.Permanent(errors.New("410 Gone")),
	}
}

func notAttempted() dispatch.Outcome {
	return dispatch.Outcome{Err: dispatch.Permanent(errors.New("event no longer stored"))}
}

func record(o dispatch.Outcome) func(ctx context.Context, e *tableEnv, j *dispatch.Job) error {
	return func(ctx context.Context, e *tableEnv, j *dispatch.Job) error {
		_, err := e.lc.RecordOutcome(ctx, j, o)
		return err
	}
}

func report(worker, action string) func(ctx context.Context, e *tableEnv, j *dispatch.Job) error {
	return func(ctx context.Context, e *tableEnv, j *dispatch.Job) error {
		o := dispatch.Outcome{Attempt: dispatch.Attempt{DurationMs: 12, StatusCode: 200}}
		if action == dispatch.ActionFailed {
			o = dispatch.Outcome{Attempt: dispatch.Attempt{DurationMs: 12, StatusCode: 500}, Err: errors.New("worker failed")}
		}
		_, _, err := e.lc.Report(ctx, j.ID, worker, action, o)
		return err
	}
}

func claim(pull bool) func(ctx context.Context, e *tableEnv, j *dispatch.Job) error {
	return func(ctx context.Context, e *tableEnv, j *dispatch.Job) error {
		return e.lc.Claim(ctx, j, dispatch.ClaimParams{Worker: claimant, Lease: tableLease, Pull: pull})
	}
}

func handBack(ctx context.Context, e *tableEnv, j *dispatch.Job) error {
	return e.lc.HandBack(ctx, j, "router shutting down")
}

func park(ctx context.Context, e *tableEnv, j *dispatch.Job) error {
	return e.lc.Park(ctx, j, dispatch.ParkParams{Until: tableNow().Add(time.Minute), Reason: "waiting for an earlier job"})
}

func parkPaused(ctx context.Context, e *tableEnv, j *dispatch.Job) error {
	return e.lc.ParkPaused(ctx, j)
}

func send(ctx context.Context, e *tableEnv, j *dispatch.Job) error {
	_, err := e.lc.Send(ctx, []*dispatch.Job{j})
	return err
}

// claimed checks the claim a Claim made: w9's, under the table's lease.
func claimed(t *testing.T, _, after *dispatch.Job) {
	t.Helper()
	require.Equal(t, claimant, after.Worker)
	require.NotNil(t, after.LeaseExpiresAt)
	require.Equal(t, tableNow().Add(tableLease), *after.LeaseExpiresAt)
}

// verbs lists every verb of the lifecycle, with its effect from each
// status on the fixtures atRest builds.
func verbs() []verbCase {
	const (
		pending    = dispatch.StatusPending
		queued     = dispatch.StatusQueued
		inProgress = dispatch.StatusInProgress
		completed  = dispatch.StatusCompleted
		errored    = dispatch.StatusError
		cancelled  = dispatch.StatusCancelled
	)
	ev := func(types ...string) []string { return types }
	return []verbCase{
		{
			name: "Claim push", run: claim(false), otherwise: dispatch.ErrClaimLost,
			from: map[dispatch.Status]effect{
				queued: {status: inProgress, events: ev(stream.TypeDispatchStarted), attempts: []string{"1:503"}, count: 1, check: claimed},
			},
		},
		{
			name: "Claim pull", pull: true, run: claim(true), otherwise: dispatch.ErrClaimLost,
			from: map[dispatch.Status]effect{
				queued: {
					status: inProgress, events: ev(stream.TypeDispatchStarted), count: 1, check: claimed,
					attempts: []string{"1 PICKED w1", "1 FAILED w1:500", "2 PICKED w9"},
				},
			},
		},
		{
			name: "RecordOutcome success", run: record(succeeded()),
			from: map[dispatch.Status]effect{
				inProgress: {
					status: completed, events: ev(stream.TypeDispatchCompleted), attempts: []string{"1:503", "2:200"},
					check: func(t *testing.T, _, after *dispatch.Job) {
						t.Helper()
						require.NotNil(t, after.CompletedAt)
						require.Nil(t, after.LastError)
						require.Equal(t, holder, after.Attempts[1].Worker)
					},
				},
			},
		},
		{
			name: "RecordOutcome retryable", run: record(retryable()),
			from: map[dispatch.Status]effect{
				inProgress: {status: pending, events: ev(stream.TypeDispatchFailed), attempts: []string{"1:503", "2:503"}, next: waitAfter2},
			},
		},
		{
			name: "RecordOutcome permanent", run: record(permanent()),
			from: map[dispatch.Status]effect{
				inProgress: {
					status: errored, events: ev(stream.TypeDispatchFailed, stream.TypeDispatchDiscarded),
					attempts: []string{"1:503", "2:410"},
				},
			},
		},
		{
			name: "RecordOutcome not attempted", run: record(notAttempted()),
			from: map[dispatch.Status]effect{
				queued:     {status: errored, events: ev(stream.TypeDispatchDiscarded), attempts: []string{"1:503"}},
				inProgress: {status: errored, events: ev(stream.TypeDispatchDiscarded), attempts: []string{"1:503"}, count: -1},
			},
		},
		{
			name: "Report complete", pull: true, run: report(holder, dispatch.ActionCompleted), otherwise: errNotAllowed,
			from: map[dispatch.Status]effect{
				inProgress: {
					status: completed, events: ev(stream.TypeDispatchCompleted),
					attempts: []string{"1 PICKED w1", "1 FAILED w1:500", "2 PICKED w1", "2 COMPLETED w1:200"},
				},
				// The holder's own report, made already: a repeat.
				completed: nothing(nil),
			},
		},
		{
			name: "Report fail", pull: true, run: report(holder, dispatch.ActionFailed), otherwise: errNotAllowed,
			from: map[dispatch.Status]effect{
				inProgress: {
					status: pending, events: ev(stream.TypeDispatchFailed), next: waitAfter2,
					attempts: []string{"1 PICKED w1", "1 FAILED w1:500", "2 PICKED w1", "2 FAILED w1:500"},
				},
				// The job's last entry is the holder's failure report: a
				// repeat of it changes nothing.
				pending:   nothing(nil),
				queued:    nothing(nil),
				errored:   nothing(nil),
				cancelled: nothing(nil),
			},
		},
		{
			name: "Report complete by another worker", pull: true, run: report(other, dispatch.ActionCompleted), otherwise: errNotAllowed,
			from: map[dispatch.Status]effect{inProgress: nothing(dispatch.ErrNotHolder)},
		},
		{
			name: "Heartbeat", pull: true, otherwise: dispatch.ErrNotHolder,
			run: func(ctx context.Context, e *tableEnv, j *dispatch.Job) error {
				_, err := e.lc.Heartbeat(ctx, j.ID, holder, tableHeartbeat)
				return err
			},
			from: map[dispatch.Status]effect{
				inProgress: {
					status: inProgress, attempts: []string{"1 PICKED w1", "1 FAILED w1:500", "2 PICKED w1"},
					check: func(t *testing.T, _, after *dispatch.Job) {
						t.Helper()
						require.Equal(t, holder, after.Worker)
						require.Equal(t, tableNow().Add(tableHeartbeat), *after.LeaseExpiresAt)
					},
				},
			},
		},
		{
			name: "HandBack", run: handBack,
			from: map[dispatch.Status]effect{
				inProgress: {status: pending, events: ev(stream.TypeDispatchPending), attempts: []string{"1:503"}, count: -1},
			},
		},
		{
			name: "Park", run: park,
			from: map[dispatch.Status]effect{
				queued: {status: pending, events: ev(stream.TypeDispatchPending), attempts: []string{"1:503"}, next: time.Minute},
			},
		},
		{
			name: "ParkPaused", run: parkPaused,
			from: map[dispatch.Status]effect{
				queued: {
					status: pending, events: ev(stream.TypeDispatchPending), attempts: []string{"1:503"}, next: tablePausedRecheck,
					check: func(t *testing.T, _, after *dispatch.Job) {
						t.Helper()
						require.Equal(t, dispatch.BlockedByPaused, after.BlockedBy)
					},
				},
			},
		},
		{
			name: "Retry", otherwise: errNotAllowed,
			run: func(ctx context.Context, e *tableEnv, j *dispatch.Job) error {
				_, err := e.lc.Retry(ctx, j.ID)
				return err
			},
			from: map[dispatch.Status]effect{
				errored:   {status: queued, events: ev(stream.TypeDispatchQueued), attempts: []string{"1:503", "2:503"}, sent: 1, check: retried},
				cancelled: {status: queued, events: ev(stream.TypeDispatchQueued), attempts: []string{"1:503"}, sent: 1, check: retried},
			},
		},
		{
			name: "Cancel", otherwise: errNotAllowed,
			run: func(ctx context.Context, e *tableEnv, j *dispatch.Job) error {
				_, err := e.lc.Cancel(ctx, j.ID, "cancelled by an operator")
				return err
			},
			from: map[dispatch.Status]effect{
				pending: {status: cancelled, events: ev(stream.TypeDispatchCancelled), attempts: []string{"1:503"}},
				queued:  {status: cancelled, events: ev(stream.TypeDispatchCancelled), attempts: []string{"1:503"}},
				// The running attempt stands ABANDONED until its outcome
				// comes.
				inProgress: {status: cancelled, events: ev(stream.TypeDispatchCancelled), attempts: []string{"1:503", "2 ABANDONED w1"}},
				errored:    {status: cancelled, events: ev(stream.TypeDispatchCancelled), attempts: []string{"1:503", "2:503"}},
			},
		},
		{
			name: "QueueDue", global: true,
			run: func(ctx context.Context, e *tableEnv, _ *dispatch.Job) error {
				_, _, err := e.lc.QueueDue(ctx, dispatch.QueueDueParams{Limit: 10})
				return err
			},
			from: map[dispatch.Status]effect{
				pending: {status: queued, events: ev(stream.TypeDispatchQueued), attempts: []string{"1:503"}, sent: 1},
			},
		},
		{
			name: "RescueStale", global: true,
			run: func(ctx context.Context, e *tableEnv, _ *dispatch.Job) error {
				_, _, err := e.lc.RescueStale(ctx, dispatch.RescueParams{Before: tableNow().Add(time.Minute), Limit: 10})
				return err
			},
			from: map[dispatch.Status]effect{
				queued: {status: pending, events: ev(stream.TypeDispatchPending), attempts: []string{"1:503"}},
			},
		},
		{
			name: "RescueExpired", global: true,
			run: func(ctx context.Context, e *tableEnv, _ *dispatch.Job) error {
				_, _, err := e.lc.RescueExpired(ctx, dispatch.RescueParams{Before: tableNow(), Limit: 10})
				return err
			},
			from: map[dispatch.Status]effect{
				inProgress: {status: pending, events: ev(stream.TypeDispatchFailed), attempts: []string{"1:503", "2 ABANDONED w1"}, next: waitAfter2},
			},
		},
		{
			name: "Send", run: send,
			from: map[dispatch.Status]effect{queued: {unchanged: true, sent: 1}},
		},
		{
			name: "ReleaseGroup", ordered: true,
			run: func(ctx context.Context, e *tableEnv, j *dispatch.Job) error {
				_, err := e.lc.ReleaseGroup(ctx, j.SubscriptionID, j.MessageGroup)
				return err
			},
			from: map[dispatch.Status]effect{
				pending: {
					status: queued, events: ev(stream.TypeDispatchQueued), attempts: []string{"1:503"}, sent: 1,
					check: func(t *testing.T, before, after *dispatch.Job) {
						t.Helper()
						require.Equal(t, blocker, before.BlockedBy)
						require.Empty(t, after.BlockedBy, "released")
					},
				},
			},
		},
	}
}

// retried checks an operator's retry: maxAttempts more attempts, the max-age
// window restarted.
func retried(t *testing.T, before, after *dispatch.Job) {
	t.Helper()
	require.Equal(t, before.AttemptCount+tableRetry().MaxAttempts, after.MaxAttempts)
	require.NotNil(t, after.RetriedAt)
	require.Equal(t, tableNow(), *after.RetriedAt)
	require.Nil(t, after.NextAttemptAt)
}

// attemptsOf renders a job's audit log for comparison: per entry its
// number, then its action and worker when it has an action (pull entries,
// ABANDONED), then ":" and its status code when it has one.
func attemptsOf(j *dispatch.Job) []string {
	out := make([]string, 0, len(j.Attempts))
	for _, a := range j.Attempts {
		s := strconv.Itoa(a.Attempt)
		if a.Action != "" {
			s += " " + a.Action + " " + a.Worker
		}
		if a.StatusCode != 0 {
			s += fmt.Sprintf(":%d", a.StatusCode)
		}
		out = append(out, s)
	}
	return out
}

// pushAttempt is the record of push attempt n, answered with code.
func pushAttempt(n, code int, worker string) dispatch.Attempt {
	a := dispatch.Attempt{
		Attempt: n, StartedAt: tableNow().Add(time.Duration(n-10) * time.Minute), DurationMs: 12,
		StatusCode: code, Worker: worker,
	}
	if code >= 300 {
		a.Error = fmt.Sprintf("%d Service Unavailable", code)
	}
	return a
}

// pullEntry is an entry of a pull job's audit log.
func pullEntry(n int, action, worker string) dispatch.Attempt {
	a := dispatch.Attempt{Attempt: n, Action: action, StartedAt: tableNow().Add(time.Duration(n-10) * time.Minute), Worker: worker}
	switch action {
	case dispatch.ActionCompleted:
		a.StatusCode = 200
	case dispatch.ActionFailed:
		a.StatusCode, a.Error = 500, "worker failed"
	}
	return a
}

// abandoned is the entry RescueExpired writes for attempt n of worker.
func abandoned(n int, worker string) dispatch.Attempt {
	return dispatch.Attempt{
		Attempt: n, Action: dispatch.ActionAbandoned, StartedAt: tableNow().Add(-time.Minute),
		Error: "lease expired: worker presumed dead", Worker: worker,
	}
}

// atRest returns job id as the verbs leave it in status st, last written
// fixtureAhead after the table's now by an instance whose clock is ahead:
//   - PENDING: attempt 1 failed, the retry due a second ago (held behind a
//     blocker when ordered);
//   - QUEUED: attempt 1 failed, retried, queued since a minute ago;
//   - IN_PROGRESS: attempt 2 claimed by w1, its lease expired a second ago;
//   - COMPLETED: attempt 1 failed, attempt 2 succeeded;
//   - ERROR: attempts 1 and 2 failed, the second for good;
//   - CANCELLED: cancelled after attempt 1 failed.
//
// A pull job's log holds the worker's PICKED, FAILED and COMPLETED entries
// instead, all by w1.
func atRest(id, sub string, st dispatch.Status, pull, ordered bool) *dispatch.Job {
	now := tableNow()
	lastErr := "503 Service Unavailable"
	j := &dispatch.Job{
		ID: id, Kind: dispatch.KindTask, Code: "order.created", SubscriptionID: sub, Subscription: "orders",
		TargetURL: "http://127.0.0.1:9/hook", Mode: dispatch.ModeImmediate, Delivery: dispatch.DeliveryPush,
		TimeoutSeconds: 10, MaxAgeSeconds: 3600, Retry: tableRetry(), Status: st, MaxAttempts: tableRetry().MaxAttempts,
		AttemptCount: 1, LastError: &lastErr, Attempts: []dispatch.Attempt{pushAttempt(1, 503, holder)},
		CreatedAt: now.Add(-10 * time.Minute), UpdatedAt: now.Add(fixtureAhead), Version: 1,
	}
	if pull {
		j.Delivery = dispatch.DeliveryPull
		j.Attempts = []dispatch.Attempt{pullEntry(1, dispatch.ActionPicked, holder), pullEntry(1, dispatch.ActionFailed, holder)}
	}
	if ordered {
		j.Mode = dispatch.ModeBlockOnError
		j.MessageGroup = "orders:" + id
	}
	switch st {
	case dispatch.StatusPending:
		due := now.Add(-time.Second)
		j.NextAttemptAt = &due
		if ordered {
			j.BlockedBy = blocker
		}
	case dispatch.StatusQueued:
		j.UpdatedAt = now.Add(-time.Minute)
	case dispatch.StatusInProgress:
		j.AttemptCount, j.Worker, j.LastError = 2, holder, nil
		lease := now.Add(-time.Second)
		j.LeaseExpiresAt = &lease
		if pull {
			j.Attempts = append(j.Attempts, pullEntry(2, dispatch.ActionPicked, holder))
		}
	case dispatch.StatusCompleted:
		j.AttemptCount, j.LastError = 2, nil
		done := j.UpdatedAt
		j.CompletedAt = &done
		j.Attempts = append(j.Attempts, pushAttempt(2, 200, holder))
		if pull {
			j.Attempts = append(j.Attempts[:2], pullEntry(2, dispatch.ActionPicked, holder), pullEntry(2, dispatch.ActionCompleted, holder))
		}
	case dispatch.StatusError:
		j.AttemptCount = 2
		j.Attempts = append(j.Attempts, pushAttempt(2, 503, holder))
		if pull {
			j.Attempts = append(j.Attempts[:2], pullEntry(2, dispatch.ActionPicked, holder), pullEntry(2, dispatch.ActionFailed, holder))
		}
	case dispatch.StatusCancelled:
	}
	return j
}

// arrivalType is the type of the status event that brings a job to st.
func arrivalType(st dispatch.Status) string {
	switch st {
	case dispatch.StatusPending:
		return stream.TypeDispatchPending
	case dispatch.StatusQueued:
		return stream.TypeDispatchQueued
	case dispatch.StatusInProgress:
		return stream.TypeDispatchStarted
	case dispatch.StatusCompleted:
		return stream.TypeDispatchCompleted
	case dispatch.StatusError:
		return stream.TypeDispatchDiscarded
	default:
		return stream.TypeDispatchCancelled
	}
}

// arrival returns the status event that brought j to its status, stamped
// with j's UpdatedAt and a random part above nearly every other of that
// millisecond (all Z but the job id's last 8 characters, which keep the
// ids of the rows apart): an event emitted later in the same millisecond by
// another instance would sort before it, so only an id moved past UpdatedAt
// sorts after it (dispatch.Job.StatusEvent).
func arrival(j *dispatch.Job) stream.Event {
	id := idgen.WithTime("7ZZZZZZZZZZZZZZZZZ"+j.ID[len(j.ID)-8:], j.UpdatedAt)
	return stream.Event{
		ID: id, Type: arrivalType(j.Status), Time: j.UpdatedAt, Subject: j.ID,
		Data: stream.Data{JobID: j.ID, Status: string(j.Status), Attempt: j.AttemptCount},
	}
}

// tableRow is one run of a verb: the stored job (made by setup) and the
// caller's copy of it.
type tableRow struct {
	name   string
	global bool
	run    func(ctx context.Context, e *tableEnv, j *dispatch.Job) error
	want   effect
	// setup stores the job and returns the caller's copy and the ids of
	// the status events stored with it.
	setup func(t *testing.T, e *tableEnv) (*dispatch.Job, []string)
}

// storeAtRest returns a row setup storing atRest(st) as the caller's copy.
func storeAtRest(st dispatch.Status, pull, ordered bool) func(t *testing.T, e *tableEnv) (*dispatch.Job, []string) {
	return func(t *testing.T, e *tableEnv) (*dispatch.Job, []string) {
		t.Helper()
		id := e.ids.New()
		j := atRest(id, "sub-"+id, st, pull, ordered)
		pre := arrival(j)
		require.NoError(t, e.st.JobInsertMany(t.Context(), &dispatch.JobInsertManyParams{
			Jobs: []*dispatch.Job{j}, Events: []stream.Event{pre},
		}))
		stored, err := e.st.JobGetByID(t.Context(), id)
		require.NoError(t, err)
		return stored, []string{pre.ID}
	}
}

func TestLifecycleVerbTable(t *testing.T) {
	t.Parallel()
	var fresh []tableRow
	for _, v := range verbs() {
		for _, st := range dispatch.Statuses() {
			want, ok := v.from[st]
			if !ok {
				want = nothing(v.otherwise)
			}
			fresh = append(fresh, tableRow{
				name: v.name + " from " + string(st), global: v.global, run: v.run, want: want,
				setup: storeAtRest(st, v.pull, v.ordered),
			})
		}
	}
	rows := map[string][]tableRow{"fresh": fresh, "stale": staleRows(), "edges": edgeRows()}
	for _, k := range storeKinds() {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			// The rows of the poller verbs, which act on every due job of
			// the store, share a store of their own and run one after the
			// other, each retiring its job when done; the other rows share
			// a store and run side by side.
			shared, pollers := k.open(t), k.open(t)
			for _, group := range []string{"fresh", "stale", "edges"} {
				for _, row := range rows[group] {
					if row.global {
						t.Run(group+"/"+row.name, func(t *testing.T) { //nolint:paralleltest // the pollers' rows list every due job: one store of their own, one at a time
							runRow(t, pollers, row)
						})
						continue
					}
					t.Run(group+"/"+row.name, func(t *testing.T) {
						t.Parallel()
						runRow(t, shared, row)
					})
				}
			}
		})
	}
}

// runRow runs one row and checks its effect.
func runRow(t *testing.T, st lifecycleStore, row tableRow) {
	t.Helper()
	ctx := t.Context()
	e := newTableEnv(t, st)
	j, preIDs := row.setup(t, e)
	if row.global {
		defer retire(t, st, j.ID)
	}
	before, err := st.JobGetByID(ctx, j.ID)
	require.NoError(t, err)

	err = row.run(ctx, e, j)
	want := row.want
	switch {
	case want.err == nil:
		require.NoError(t, err)
	case errors.Is(want.err, errNotAllowed):
		var na *dispatch.NotAllowedError
		require.ErrorAs(t, err, &na)
		require.ErrorIs(t, err, dispatch.ErrInvalidTransition)
		require.Equal(t, before.Status, na.Status)
	default:
		require.ErrorIs(t, err, want.err)
	}

	after, err := st.JobGetByID(ctx, j.ID)
	require.NoError(t, err)
	events, err := st.StatusEventListBySubject(ctx, j.ID)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(events), len(preIDs))
	ids := make([]string, len(events))
	for i, ev := range events {
		ids[i] = ev.ID
	}
	require.Equal(t, preIDs, ids[:len(preIDs)], "the events emitted sort after the job's earlier ones")
	emitted := events[len(preIDs):]
	require.Equal(t, want.sent, sentFor(t, e.q, j.ID), "messages sent")

	if want.unchanged {
		require.Equal(t, before, after, "the job is left as it was")
		require.Empty(t, emitted, "no status event")
		return
	}
	require.Equal(t, before.Version+1, after.Version, "one write")
	require.Equal(t, want.status, after.Status)
	types := make([]string, len(emitted))
	for i, ev := range emitted {
		types[i] = ev.Type
		require.Equal(t, j.ID, ev.Subject)
		require.Equal(t, j.ID, ev.Data.JobID)
	}
	if len(types) == 0 {
		types = nil
	}
	require.Equal(t, want.events, types, "status events")
	if len(emitted) > 0 {
		require.Equal(t, string(after.Status), emitted[len(emitted)-1].Data.Status, "the last event carries the new status")
	}
	require.Equal(t, want.attempts, attemptsOf(after), "attempts")
	require.Equal(t, before.AttemptCount+want.count, after.AttemptCount, "attemptCount")
	require.True(t, after.UpdatedAt.After(before.UpdatedAt), "updatedAt moves on")
	switch {
	case after.Status != dispatch.StatusPending:
		require.Nil(t, after.NextAttemptAt, "nextAttemptAt is cleared out of PENDING")
	case want.keepNext:
		require.Equal(t, before.NextAttemptAt, after.NextAttemptAt)
	default:
		require.NotNil(t, after.NextAttemptAt)
		require.Equal(t, tableNow().Add(want.next), *after.NextAttemptAt, "nextAttemptAt")
	}
	if after.Status == dispatch.StatusInProgress {
		require.NotEmpty(t, after.Worker)
		require.NotNil(t, after.LeaseExpiresAt)
	} else {
		require.Empty(t, after.Worker, "the claim ends with IN_PROGRESS")
		require.Nil(t, after.LeaseExpiresAt)
	}
	require.Equal(t, after.Status == dispatch.StatusCompleted, after.CompletedAt != nil, "completedAt iff COMPLETED")
	if want.check != nil {
		want.check(t, before, after)
	}
}

// sentFor returns how many messages q holds, after checking that all are
// the job's.
func sentFor(t *testing.T, q *memqueue.Queue, jobID string) int {
	t.Helper()
	n := 0
	for {
		msgs, err := q.Receive(t.Context(), queue.ReceiveParams{Max: queue.MaxBatch})
		require.NoError(t, err)
		if len(msgs) == 0 {
			return n
		}
		for _, m := range msgs {
			require.Equal(t, jobID, string(m.Body))
			require.NoError(t, q.Delete(t.Context(), m.ReceiptHandle))
			n++
		}
	}
}

// retire takes a row's job out of the way of the next rows (the poller
// verbs act on every due job of the store) by marking it COMPLETED directly
// in the store: a fixture write, not a move of the lifecycle's.
func retire(t *testing.T, st lifecycleStore, id string) {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	j, err := st.JobGetByID(ctx, id)
	require.NoError(t, err)
	j.Status, j.NextAttemptAt, j.LeaseExpiresAt, j.Worker = dispatch.StatusCompleted, nil, nil, ""
	require.NoError(t, st.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: j}))
}
