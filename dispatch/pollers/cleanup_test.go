package pollers

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/storage/sqlitestore"
	"github.com/hooklane/hooklane/store"
)

// cleanupFixture is a real embedded store holding events received at chosen
// times, each with one job.
type cleanupFixture struct {
	t   *testing.T
	ctx context.Context
	st  *sqlitestore.Store
	now time.Time
}

func newCleanupFixture(t *testing.T) *cleanupFixture {
	t.Helper()
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: filepath.Join(t.TempDir(), "hooklane.db")})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	return &cleanupFixture{t: t, ctx: t.Context(), st: st, now: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)}
}

// ingest stores an event received age ago whose job is in status, last
// changed jobAge ago, and returns the event and the job.
func (f *cleanupFixture) ingest(age time.Duration, status dispatch.Status, jobAge time.Duration) (*event.Event, *dispatch.Job) {
	f.t.Helper()
	received := f.now.Add(-age)
	id := idgen.New(func() time.Time { return received }).New()
	ev := &event.Event{
		ID: id, ReceivedAt: received, DedupKey: "/cleanup\x00" + id,
		Event: cloudevent.Event{
			SpecVersion: cloudevent.SpecVersion, ID: "ce-" + id, Source: "/cleanup", Type: "cleanup.tested",
			Time: received, DataContentType: "application/json", Data: json.RawMessage(`{}`),
		},
	}
	updated := f.now.Add(-jobAge)
	job := &dispatch.Job{
		ID: idgen.Derived(received, id, "sub-1"), Kind: dispatch.KindEvent, Code: "cleanup.tested", EventID: id,
		SubscriptionID: "sub-1", Subscription: "cleanup", TargetURL: "http://127.0.0.1:9/hook", Mode: dispatch.ModeImmediate,
		Delivery: dispatch.DeliveryPush, TimeoutSeconds: 5, Retry: dispatch.Retry{MaxAttempts: 5, InitialBackoffSeconds: 1, MaxBackoffSeconds: 60},
		Status: status, MaxAttempts: 5, Attempts: []dispatch.Attempt{}, CreatedAt: received, UpdatedAt: updated,
	}
	if status == dispatch.StatusPending {
		next := f.now.Add(time.Hour) // retrying later
		job.NextAttemptAt = &next
	}
	if status == dispatch.StatusCompleted {
		job.CompletedAt = &updated
	}
	res, err := f.st.EventIngest(f.ctx, &dispatch.EventIngestParams{Items: []dispatch.EventIngestItem{{Event: ev, Jobs: []*dispatch.Job{job}}}})
	require.NoError(f.t, err)
	require.False(f.t, res[0].Duplicate)
	job.Version = 1
	return ev, job
}

func (f *cleanupFixture) eventExists(id string) bool {
	f.t.Helper()
	_, err := f.st.EventGetByID(f.ctx, id)
	if err != nil {
		require.ErrorIs(f.t, err, store.ErrNotFound)
		return false
	}
	return true
}

func (f *cleanupFixture) jobExists(id string) bool {
	f.t.Helper()
	_, err := f.st.JobGetByID(f.ctx, id)
	if err != nil {
		require.ErrorIs(f.t, err, store.ErrNotFound)
		return false
	}
	return true
}

func TestCleanupKeepsEventsOfUnfinishedJobs(t *testing.T) {
	t.Parallel()
	f := newCleanupFixture(t)
	const day = 24 * time.Hour
	oldDone, oldDoneJob := f.ingest(10*day, dispatch.StatusCompleted, 9*day)
	retrying, retryingJob := f.ingest(9*day, dispatch.StatusPending, 9*day)
	laterDone, laterDoneJob := f.ingest(8*day, dispatch.StatusError, 8*day)
	recent, recentJob := f.ingest(day, dispatch.StatusCompleted, day)

	c := NewCleanup(CleanupConfig{Store: f.st, NowFunc: func() time.Time { return f.now }})
	jobs, events, err := c.RunOnce(f.ctx)
	require.NoError(t, err)
	require.Equal(t, 2, jobs, "the two finished jobs older than the 168 h default")
	require.Equal(t, 1, events, "only the event older than the oldest unfinished job's event")
	require.False(t, f.jobExists(oldDoneJob.ID))
	require.False(t, f.jobExists(laterDoneJob.ID))
	require.True(t, f.jobExists(retryingJob.ID), "unfinished jobs are never deleted")
	require.True(t, f.jobExists(recentJob.ID))
	require.False(t, f.eventExists(oldDone.ID))
	require.True(t, f.eventExists(retrying.ID), "its job still needs it for the next delivery")
	require.True(t, f.eventExists(laterDone.ID), "received after an event still needed: kept until that one goes")
	require.True(t, f.eventExists(recent.ID))

	// The retrying job finishes, and its retention passes: the events it
	// held back go, the recent one stays.
	retryingJob.Status = dispatch.StatusCompleted
	retryingJob.NextAttemptAt = nil
	done := f.now.Add(-8 * day)
	retryingJob.UpdatedAt, retryingJob.CompletedAt = done, &done
	require.NoError(t, f.st.JobUpdate(f.ctx, &dispatch.JobUpdateParams{Job: retryingJob}))
	jobs, events, err = c.RunOnce(f.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, jobs)
	require.Equal(t, 2, events)
	require.False(t, f.eventExists(retrying.ID))
	require.False(t, f.eventExists(laterDone.ID))
	require.True(t, f.eventExists(recent.ID))
	require.True(t, f.jobExists(recentJob.ID))
}

func TestCleanupRetentionsAndBatches(t *testing.T) {
	t.Parallel()
	const hour = time.Hour
	tests := []struct {
		name                  string
		jobRet, eventRet      time.Duration
		wantJobs, wantEvents  []int // per round
		keptJobs, keptEvents  int
		eventAge, finishedAgo time.Duration
		count, batch          int
	}{
		{
			name: "both expired, in batches", jobRet: 2 * hour, eventRet: 2 * hour, eventAge: 5 * hour, finishedAgo: 4 * hour,
			count: 12, batch: 5, wantJobs: []int{5, 5, 2, 0}, wantEvents: []int{5, 5, 2, 0},
		},
		{
			name: "jobs expired, events kept", jobRet: 2 * hour, eventRet: 10 * hour, eventAge: 5 * hour, finishedAgo: 4 * hour,
			count: 3, batch: 5, wantJobs: []int{3, 0}, wantEvents: []int{0, 0}, keptEvents: 3,
		},
		{
			name: "events outlive the job retention", jobRet: 6 * hour, eventRet: 2 * hour, eventAge: 5 * hour, finishedAgo: 4 * hour,
			count: 3, batch: 5, wantJobs: []int{0}, wantEvents: []int{0}, keptJobs: 3, keptEvents: 3,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newCleanupFixture(t)
			var evIDs, jobIDs []string
			for i := range tc.count {
				ev, job := f.ingest(tc.eventAge-time.Duration(i)*time.Second, dispatch.StatusCompleted, tc.finishedAgo)
				evIDs, jobIDs = append(evIDs, ev.ID), append(jobIDs, job.ID)
			}
			var reported []string
			c := NewCleanup(CleanupConfig{
				Store: f.st, JobRetention: tc.jobRet, EventRetention: tc.eventRet, BatchSize: tc.batch,
				NowFunc: func() time.Time { return f.now }, OnDeleteFunc: func(kind string, _ int) { reported = append(reported, kind) },
			})
			for round := range tc.wantJobs {
				jobs, events, err := c.RunOnce(f.ctx)
				require.NoError(t, err)
				require.Equal(t, tc.wantJobs[round], jobs, "round %d jobs", round)
				require.Equal(t, tc.wantEvents[round], events, "round %d events", round)
			}
			kept := 0
			for _, id := range jobIDs {
				if f.jobExists(id) {
					kept++
				}
			}
			require.Equal(t, tc.keptJobs, kept)
			kept = 0
			for _, id := range evIDs {
				if f.eventExists(id) {
					kept++
				}
			}
			require.Equal(t, tc.keptEvents, kept)
			for _, kind := range reported {
				require.Contains(t, []string{CleanupJobs, CleanupEvents}, kind)
			}
		})
	}
}

// floorStore answers the floor queries of the cleanup poller from fixed
// values and records the event delete's cut-off.
type floorStore struct {
	notFanned []*event.Event
	oldest    map[dispatch.Status]*dispatch.Job
	before    time.Time
}

func (s *floorStore) JobDeleteFinishedBefore(context.Context, *dispatch.JobDeleteFinishedBeforeParams) (int, error) {
	return 0, nil
}

func (s *floorStore) JobListDue(_ context.Context, p *dispatch.JobListDueParams) ([]*dispatch.Job, error) {
	if j := s.oldest[p.Status]; j != nil {
		return []*dispatch.Job{j}, nil
	}
	return nil, nil
}

func (s *floorStore) EventListNotFannedOut(context.Context, *event.ListNotFannedOutParams) ([]*event.Event, error) {
	return s.notFanned, nil
}

func (s *floorStore) EventDeleteBefore(_ context.Context, before time.Time, _ int) (int, error) {
	s.before = before
	return 0, nil
}

func TestCleanupEventFloor(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	idAt := func(at time.Time) string { return idgen.New(func() time.Time { return at }).New() }
	task := &dispatch.Job{ID: idAt(now.Add(-200 * time.Hour)), Kind: dispatch.KindTask}
	eventJob := &dispatch.Job{ID: "x", EventID: idAt(now.Add(-300 * time.Hour)), Kind: dispatch.KindEvent}
	tests := []struct {
		name  string
		store *floorStore
		want  time.Time
	}{
		{name: "nothing unfinished: the longer retention", store: &floorStore{}, want: now.Add(-168 * time.Hour)},
		{
			name: "an event not fanned out", store: &floorStore{notFanned: []*event.Event{{ID: "e", ReceivedAt: now.Add(-170 * time.Hour)}}},
			want: now.Add(-170 * time.Hour),
		},
		{
			name: "an old queued task job", store: &floorStore{oldest: map[dispatch.Status]*dispatch.Job{dispatch.StatusQueued: task}},
			want: now.Add(-200*time.Hour - eventFloorMargin),
		},
		{name: "the oldest of several unfinished", store: &floorStore{oldest: map[dispatch.Status]*dispatch.Job{
			dispatch.StatusQueued: task, dispatch.StatusInProgress: eventJob,
		}}, want: now.Add(-300*time.Hour - eventFloorMargin)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := NewCleanup(CleanupConfig{Store: tc.store, EventRetention: time.Hour, NowFunc: func() time.Time { return now }})
			_, _, err := c.RunOnce(t.Context())
			require.NoError(t, err)
			require.Equal(t, tc.want, tc.store.before)
		})
	}
}

func TestULIDTime(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 10, 12, 0, 0, 123_000_000, time.UTC)
	tests := []struct {
		name    string
		id      string
		want    time.Time
		wantErr bool
	}{
		{name: "generated", id: idgen.New(func() time.Time { return at }).New(), want: at},
		{name: "derived", id: idgen.Derived(at, "a", "b"), want: at},
		{name: "lower case", id: strings.ToLower(idgen.New(func() time.Time { return at }).New()), want: at},
		{name: "short", id: "01ARZ3", wantErr: true},
		{name: "bad alphabet", id: "01ARZ3NDEKTSV4RRFFQ69G5FAU"[:9] + "U" + "TSV4RRFFQ69G5FAV", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ulidTime(tc.id)
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
