package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/destination/endpoint"
	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/stream"
)

func testJob(t *testing.T, newStore NewStoreFunc) {
	t.Helper()

	t.Run("InsertRoundTripsEveryField", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		full := b.newJob(func(j *dispatch.Job) {
			j.Kind = dispatch.KindTask
			j.Auth = &endpoint.Auth{Type: endpoint.AuthBasic, Username: "u", Password: "basic-password"}
			j.TLS = &endpoint.TLS{ClientCertificate: "client-cert-pem", ClientKey: "client-key-pem"}
			j.Status = dispatch.StatusInProgress
			j.AttemptCount = 2
			j.NextAttemptAt = new(baseTime().Add(time.Minute))
			j.LastError = new("HTTP 503")
			j.BlockedBy = "01J0000000000000000000BLCK"
			j.Worker = "worker-7"
			j.LeaseExpiresAt = new(baseTime().Add(30 * time.Second))
			j.CompletedAt = new(baseTime().Add(2 * time.Minute))
			j.UpdatedAt = baseTime().Add(time.Second)
			j.TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
			j.Attempts = []dispatch.Attempt{
				{Attempt: 1, StartedAt: baseTime(), DurationMs: 120, StatusCode: 503, Error: "unavailable", ResponseBody: "busy"},
				{Attempt: 2, Action: dispatch.ActionPicked, StartedAt: baseTime().Add(time.Second), Worker: "worker-7"},
			}
		})
		minimal := b.newJob(func(j *dispatch.Job) {
			j.Subject, j.CorrelationID, j.MessageGroup, j.DispatchPoolID = "", "", "", ""
			j.Headers, j.Payload, j.Secret = nil, nil, ""
			j.DataOnly = false
			j.Mode = dispatch.ModeImmediate
			j.Delivery = dispatch.DeliveryPull
			j.Retry = dispatch.Retry{}
		})
		b.insertJobs(t, full, minimal)
		require.Equal(t, int64(1), full.Version, "insert sets the version on the passed job")
		require.Equal(t, int64(1), minimal.Version)

		for _, want := range []*dispatch.Job{full, minimal} {
			got, err := b.store.JobGetByID(b.ctx, want.ID)
			require.NoError(t, err)
			require.Equal(t, want, got)
		}
		got, err := b.store.JobGetByID(b.ctx, full.ID)
		require.NoError(t, err)
		require.Equal(t, "whsec_c2VjcmV0", got.Secret, "the secret is stored though it has no JSON")
	})

	t.Run("GetMissing", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		_, err := b.store.JobGetByID(b.ctx, "01J00000000000000000000000")
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("GetManyAndListByEvent", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		j1 := b.newJob(func(j *dispatch.Job) { j.EventID = "ev-1" })
		j2 := b.newJob(func(j *dispatch.Job) { j.EventID = "ev-1"; j.SubscriptionID = "sub-2" })
		j3 := b.newJob(func(j *dispatch.Job) { j.EventID = "ev-2" })
		b.insertJobs(t, j1, j2, j3)

		got, err := b.store.JobGetMany(b.ctx, []string{j3.ID, "missing", j1.ID})
		require.NoError(t, err)
		require.ElementsMatch(t, []*dispatch.Job{j1, j3}, got)
		got, err = b.store.JobGetMany(b.ctx, nil)
		require.NoError(t, err)
		require.Empty(t, got)

		got, err = b.store.JobListByEvent(b.ctx, "ev-1")
		require.NoError(t, err)
		require.ElementsMatch(t, []*dispatch.Job{j1, j2}, got)
		got, err = b.store.JobListByEvent(b.ctx, "ev-none")
		require.NoError(t, err)
		require.Empty(t, got)
	})

	t.Run("InsertManyIsIdempotent", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		orig := b.newJob(nil)
		created := b.statusEvent(stream.TypeDispatchCreated, orig.ID, baseTime())
		require.NoError(t, b.store.JobInsertMany(b.ctx, &dispatch.JobInsertManyParams{
			Jobs: []*dispatch.Job{orig}, Events: []stream.Event{created},
		}))

		again := *orig
		again.Status = dispatch.StatusPending
		again.TargetURL = "http://127.0.0.1:9/other"
		again.Version = 0
		againEvent := b.statusEvent(stream.TypeDispatchCreated, orig.ID, baseTime())
		fresh := b.newJob(nil)
		freshEvent := b.statusEvent(stream.TypeDispatchCreated, fresh.ID, baseTime())
		require.NoError(t, b.store.JobInsertMany(b.ctx, &dispatch.JobInsertManyParams{
			Jobs: []*dispatch.Job{&again, fresh}, Events: []stream.Event{againEvent, freshEvent},
		}))

		got, err := b.store.JobGetByID(b.ctx, orig.ID)
		require.NoError(t, err)
		require.Equal(t, orig, got, "the stored job is kept as it was")
		events, err := b.store.StatusEventListBySubject(b.ctx, orig.ID)
		require.NoError(t, err)
		require.Equal(t, []stream.Event{created}, events, "status events of a stored job are not written again")

		got, err = b.store.JobGetByID(b.ctx, fresh.ID)
		require.NoError(t, err)
		require.Equal(t, fresh, got)
		events, err = b.store.StatusEventListBySubject(b.ctx, fresh.ID)
		require.NoError(t, err)
		require.Equal(t, []stream.Event{freshEvent}, events)
	})

	t.Run("Update", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		orig := b.newJob(nil)
		b.insertJobs(t, orig)

		read, err := b.store.JobGetByID(b.ctx, orig.ID)
		require.NoError(t, err)
		stale := *read
		require.NoError(t, read.Transition(dispatch.StatusInProgress, baseTime().Add(time.Second)))
		read.Worker = "w-1"
		read.LeaseExpiresAt = new(baseTime().Add(time.Minute))
		read.AttemptCount = 1
		read.Attempts = append(read.Attempts, dispatch.Attempt{Attempt: 1, Action: dispatch.ActionPicked, StartedAt: baseTime(), Worker: "w-1"})
		started := b.statusEvent(stream.TypeDispatchStarted, orig.ID, baseTime())
		require.NoError(t, b.store.JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: read, Events: []stream.Event{started}}))
		require.Equal(t, int64(2), read.Version)

		got, err := b.store.JobGetByID(b.ctx, orig.ID)
		require.NoError(t, err)
		require.Equal(t, read, got)

		// An update from the stale read is refused and writes nothing.
		stale.Status = dispatch.StatusCancelled
		lost := b.statusEvent(stream.TypeDispatchCancelled, orig.ID, baseTime())
		err = b.store.JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: &stale, Events: []stream.Event{lost}})
		require.ErrorIs(t, err, store.ErrStale)
		require.Equal(t, int64(1), stale.Version, "a refused update leaves the version")
		got, err = b.store.JobGetByID(b.ctx, orig.ID)
		require.NoError(t, err)
		require.Equal(t, read, got)
		events, err := b.store.StatusEventListBySubject(b.ctx, orig.ID)
		require.NoError(t, err)
		require.Equal(t, []stream.Event{started}, events)

		// A second update from the fresh version works again.
		require.NoError(t, read.Transition(dispatch.StatusCompleted, baseTime().Add(2*time.Second)))
		require.NoError(t, b.store.JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: read}))
		require.Equal(t, int64(3), read.Version)
		got, err = b.store.JobGetByID(b.ctx, orig.ID)
		require.NoError(t, err)
		require.Equal(t, read, got)

		missing := b.newJob(nil)
		missing.Version = 1
		err = b.store.JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: missing})
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("ClaimIsAtomic", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		job := b.newJob(nil)
		b.insertJobs(t, job)

		const claimants = 20
		ids := make([]string, claimants)
		for i := range ids {
			ids[i] = job.ID
		}
		errs, workers, _ := b.raceClaims(ids)

		winner := -1
		for i, err := range errs {
			if err == nil {
				require.Equal(t, -1, winner, "two claimants succeeded")
				winner = i
				continue
			}
			require.ErrorIs(t, err, store.ErrConflict)
		}
		require.NotEqual(t, -1, winner, "no claimant succeeded")
		got, err := b.store.JobGetByID(b.ctx, job.ID)
		require.NoError(t, err)
		require.Equal(t, dispatch.StatusInProgress, got.Status)
		require.Equal(t, workers[winner], got.Worker)
		require.Equal(t, int64(2), got.Version)
		events, err := b.store.StatusEventListBySubject(b.ctx, job.ID)
		require.NoError(t, err)
		require.Len(t, events, 1, "only the winner's status event is stored")
	})

	t.Run("ConcurrentClaimsOfManyJobs", func(t *testing.T) {
		t.Parallel()
		testJobConcurrentClaims(t, newStore)
	})

	t.Run("List", func(t *testing.T) { t.Parallel(); testJobList(t, newStore) })
	t.Run("ListPagination", func(t *testing.T) { t.Parallel(); testJobListPagination(t, newStore) })
	t.Run("ListDue", func(t *testing.T) { t.Parallel(); testJobListDue(t, newStore) })
	t.Run("ListGroup", func(t *testing.T) { t.Parallel(); testJobListGroup(t, newStore) })
	t.Run("DeleteFinishedBefore", func(t *testing.T) { t.Parallel(); testJobDeleteFinishedBefore(t, newStore) })
}

func testJobList(t *testing.T, newStore NewStoreFunc) {
	t.Helper()
	b := setup(t, newStore)
	at := func(d time.Duration) time.Time { return baseTime().Add(d) }
	j0 := b.newJob(func(j *dispatch.Job) { j.CreatedAt = at(0); j.EventID = "ev-1" })
	j1 := b.newJob(func(j *dispatch.Job) {
		j.CreatedAt = at(time.Second)
		j.Status = dispatch.StatusCompleted
		j.SubscriptionID, j.Subscription = "sub-2", "billing"
		j.EventID = "ev-1"
	})
	j2 := b.newJob(func(j *dispatch.Job) {
		j.CreatedAt = at(2 * time.Second)
		j.Code = "order.paid"
		j.MessageGroup = "group-b"
		j.EventID = "ev-2"
	})
	j3 := b.newJob(func(j *dispatch.Job) {
		j.CreatedAt = at(3 * time.Second)
		j.Status = dispatch.StatusCompleted
		j.Subscription = "orders-renamed"
	})
	b.insertJobs(t, j2, j0, j3, j1)

	tests := []struct {
		name string
		p    dispatch.JobListParams
		want []*dispatch.Job // newest first
	}{
		{"All", dispatch.JobListParams{}, []*dispatch.Job{j3, j2, j1, j0}},
		{"Status", dispatch.JobListParams{Status: dispatch.StatusCompleted}, []*dispatch.Job{j3, j1}},
		{"SubscriptionID", dispatch.JobListParams{SubscriptionID: "sub-2"}, []*dispatch.Job{j1}},
		{"Subscription", dispatch.JobListParams{Subscription: "orders"}, []*dispatch.Job{j2, j0}},
		{"EventID", dispatch.JobListParams{EventID: "ev-1"}, []*dispatch.Job{j1, j0}},
		{"EventType", dispatch.JobListParams{EventType: "order.paid"}, []*dispatch.Job{j2}},
		{"MessageGroup", dispatch.JobListParams{MessageGroup: "group-b"}, []*dispatch.Job{j2}},
		{"SinceInclusive", dispatch.JobListParams{Since: at(time.Second)}, []*dispatch.Job{j3, j2, j1}},
		{"UntilExclusive", dispatch.JobListParams{Until: at(2 * time.Second)}, []*dispatch.Job{j1, j0}},
		{"Combined", dispatch.JobListParams{Status: dispatch.StatusQueued, Subscription: "orders", Since: at(time.Second)}, []*dispatch.Job{j2}},
		{"NoMatch", dispatch.JobListParams{Status: dispatch.StatusError}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := tt.p
			p.Limit = 10
			page, err := b.store.JobList(b.ctx, &p)
			require.NoError(t, err)
			require.Equal(t, jobIDs(tt.want), jobIDs(page.Jobs))
			require.Empty(t, page.NextCursor)
		})
	}
	page, err := b.store.JobList(b.ctx, &dispatch.JobListParams{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, []*dispatch.Job{j3, j2, j1, j0}, page.Jobs, "listed jobs carry every field")
}

func testJobListPagination(t *testing.T, newStore NewStoreFunc) {
	t.Helper()
	b := setup(t, newStore)
	var all, queued []*dispatch.Job
	for i := range 17 {
		j := b.newJob(func(j *dispatch.Job) {
			if i%3 == 0 {
				j.Status = dispatch.StatusPending
			}
		})
		all = append(all, j)
		if j.Status == dispatch.StatusQueued {
			queued = append(queued, j)
		}
	}
	b.insertJobs(t, reversed(all)...)

	collect := func(p dispatch.JobListParams) []string {
		var ids []string
		for pages := 0; ; pages++ {
			require.Less(t, pages, 30, "pagination does not end")
			page, err := b.store.JobList(b.ctx, &p)
			require.NoError(t, err)
			require.LessOrEqual(t, len(page.Jobs), p.Limit)
			ids = append(ids, jobIDs(page.Jobs)...)
			if page.NextCursor == "" {
				return ids
			}
			require.NotEmpty(t, page.Jobs)
			p.Cursor = page.NextCursor
		}
	}
	require.Equal(t, reversed(jobIDs(all)), collect(dispatch.JobListParams{Limit: 4}))
	require.Equal(t, reversed(jobIDs(all)), collect(dispatch.JobListParams{Limit: 17}))
	require.Equal(t, reversed(jobIDs(all)), collect(dispatch.JobListParams{Limit: 1}))
	require.Equal(t, reversed(jobIDs(queued)), collect(dispatch.JobListParams{Status: dispatch.StatusQueued, Limit: 3}))
}

func testJobListDue(t *testing.T, newStore NewStoreFunc) {
	t.Helper()
	b := setup(t, newStore)
	now := baseTime().Add(time.Hour)
	at := func(d time.Duration) *time.Time { return new(now.Add(d)) }
	// Jobs are created in id order; OrderKey is the event id when set, so
	// the order keys below run against creation order on purpose.
	mk := func(status dispatch.Status, orderKey string, mod func(j *dispatch.Job)) *dispatch.Job {
		return b.newJob(func(j *dispatch.Job) {
			j.Status = status
			j.EventID = orderKey
			if mod != nil {
				mod(j)
			}
		})
	}
	pendingNil := mk(dispatch.StatusPending, "k05", nil)
	pendingPast := mk(dispatch.StatusPending, "k02", func(j *dispatch.Job) { j.NextAttemptAt = at(-time.Minute) })
	pendingNow := mk(dispatch.StatusPending, "k09", func(j *dispatch.Job) { j.NextAttemptAt = at(0) })
	pendingFuture := mk(dispatch.StatusPending, "k01", func(j *dispatch.Job) { j.NextAttemptAt = at(time.Millisecond) })
	pendingPull := mk(dispatch.StatusPending, "k07", func(j *dispatch.Job) { j.Delivery = dispatch.DeliveryPull })
	pendingOtherSub := mk(dispatch.StatusPending, "k08", func(j *dispatch.Job) { j.SubscriptionID = "sub-9" })
	queuedOld := mk(dispatch.StatusQueued, "k04", func(j *dispatch.Job) { j.UpdatedAt = now.Add(-time.Minute) })
	queuedNow := mk(dispatch.StatusQueued, "k03", func(j *dispatch.Job) { j.UpdatedAt = now })
	queuedNew := mk(dispatch.StatusQueued, "k00", func(j *dispatch.Job) { j.UpdatedAt = now.Add(time.Millisecond) })
	leaseGone := mk(dispatch.StatusInProgress, "k06", func(j *dispatch.Job) { j.LeaseExpiresAt = at(-time.Second) })
	leaseNow := mk(dispatch.StatusInProgress, "k05b", func(j *dispatch.Job) { j.LeaseExpiresAt = at(0) })
	leaseHeld := mk(dispatch.StatusInProgress, "k00b", func(j *dispatch.Job) { j.LeaseExpiresAt = at(time.Second) })
	done := mk(dispatch.StatusCompleted, "k00c", nil)
	failed := mk(dispatch.StatusError, "k00d", nil)
	b.insertJobs(t, pendingNil, pendingPast, pendingNow, pendingFuture, pendingPull, pendingOtherSub,
		queuedOld, queuedNow, queuedNew, leaseGone, leaseNow, leaseHeld, done, failed)

	tests := []struct {
		name string
		p    dispatch.JobListDueParams
		want []*dispatch.Job // ascending OrderKey
	}{
		{"Pending", dispatch.JobListDueParams{Status: dispatch.StatusPending}, []*dispatch.Job{pendingPast, pendingNil, pendingPull, pendingOtherSub, pendingNow}},
		{"PendingLimit", dispatch.JobListDueParams{Status: dispatch.StatusPending, Limit: 2}, []*dispatch.Job{pendingPast, pendingNil}},
		{"PendingSubscription", dispatch.JobListDueParams{Status: dispatch.StatusPending, SubscriptionID: "sub-9"}, []*dispatch.Job{pendingOtherSub}},
		{"PendingPull", dispatch.JobListDueParams{Status: dispatch.StatusPending, Delivery: dispatch.DeliveryPull}, []*dispatch.Job{pendingPull}},
		{"PendingPush", dispatch.JobListDueParams{Status: dispatch.StatusPending, Delivery: dispatch.DeliveryPush, SubscriptionID: "sub-1"}, []*dispatch.Job{pendingPast, pendingNil, pendingNow}},
		{"Queued", dispatch.JobListDueParams{Status: dispatch.StatusQueued}, []*dispatch.Job{queuedNow, queuedOld}},
		{"InProgress", dispatch.JobListDueParams{Status: dispatch.StatusInProgress}, []*dispatch.Job{leaseNow, leaseGone}},
		{"Completed", dispatch.JobListDueParams{Status: dispatch.StatusCompleted}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := tt.p
			p.Now = now
			if p.Limit == 0 {
				p.Limit = 100
			}
			got, err := b.store.JobListDue(b.ctx, &p)
			require.NoError(t, err)
			require.Equal(t, jobIDs(tt.want), jobIDs(got))
		})
	}
	got, err := b.store.JobListDue(b.ctx, &dispatch.JobListDueParams{Status: dispatch.StatusInProgress, Now: now, Limit: 1})
	require.NoError(t, err)
	require.Equal(t, []*dispatch.Job{leaseNow}, got, "due jobs carry every field")
}

func testJobListGroup(t *testing.T, newStore NewStoreFunc) {
	t.Helper()
	b := setup(t, newStore)
	mk := func(orderKey string, mod func(j *dispatch.Job)) *dispatch.Job {
		return b.newJob(func(j *dispatch.Job) {
			j.EventID = orderKey
			j.MessageGroup = "g1"
			if mod != nil {
				mod(j)
			}
		})
	}
	a := mk("k3", nil)
	bb := mk("k1", func(j *dispatch.Job) { j.Status = dispatch.StatusError })
	c := mk("k5", func(j *dispatch.Job) { j.Status = dispatch.StatusPending })
	d := mk("k2", func(j *dispatch.Job) { j.Status = dispatch.StatusCompleted })
	e := mk("k4", func(j *dispatch.Job) { j.Status = dispatch.StatusInProgress; j.LeaseExpiresAt = new(baseTime()) })
	otherGroup := mk("k0", func(j *dispatch.Job) { j.MessageGroup = "g2" })
	otherSub := mk("k0b", func(j *dispatch.Job) { j.SubscriptionID = "sub-2" })
	b.insertJobs(t, a, bb, c, d, e, otherGroup, otherSub)

	tests := []struct {
		name string
		p    dispatch.JobListGroupParams
		want []*dispatch.Job
	}{
		{"All", dispatch.JobListGroupParams{}, []*dispatch.Job{bb, d, a, e, c}},
		{"Limit", dispatch.JobListGroupParams{Limit: 2}, []*dispatch.Job{bb, d}},
		{"BeforeOrderKey", dispatch.JobListGroupParams{BeforeOrderKey: "k4"}, []*dispatch.Job{bb, d, a}},
		{"Statuses", dispatch.JobListGroupParams{Statuses: []dispatch.Status{dispatch.StatusError, dispatch.StatusPending, dispatch.StatusQueued}}, []*dispatch.Job{bb, a, c}},
		{"StatusesBefore", dispatch.JobListGroupParams{Statuses: []dispatch.Status{dispatch.StatusCompleted, dispatch.StatusPending}, BeforeOrderKey: "k5"}, []*dispatch.Job{d}},
		{"OtherGroup", dispatch.JobListGroupParams{MessageGroup: "g2"}, []*dispatch.Job{otherGroup}},
		{"OtherSubscription", dispatch.JobListGroupParams{SubscriptionID: "sub-2"}, []*dispatch.Job{otherSub}},
		{"None", dispatch.JobListGroupParams{MessageGroup: "g3"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := tt.p
			if p.SubscriptionID == "" {
				p.SubscriptionID = "sub-1"
			}
			if p.MessageGroup == "" {
				p.MessageGroup = "g1"
			}
			if p.Limit == 0 {
				p.Limit = 100
			}
			got, err := b.store.JobListGroup(b.ctx, &p)
			require.NoError(t, err)
			require.Equal(t, jobIDs(tt.want), jobIDs(got))
		})
	}
	got, err := b.store.JobListGroup(b.ctx, &dispatch.JobListGroupParams{SubscriptionID: "sub-1", MessageGroup: "g1", Limit: 1})
	require.NoError(t, err)
	require.Equal(t, []*dispatch.Job{bb}, got, "group jobs carry every field")
}

func testJobDeleteFinishedBefore(t *testing.T, newStore NewStoreFunc) {
	t.Helper()
	b := setup(t, newStore)
	cutoff := baseTime().Add(time.Hour)
	mk := func(status dispatch.Status, updated time.Time) *dispatch.Job {
		return b.newJob(func(j *dispatch.Job) { j.Status = status; j.UpdatedAt = updated })
	}
	old := cutoff.Add(-time.Minute)
	doneOld := mk(dispatch.StatusCompleted, old)
	errOld := mk(dispatch.StatusError, old)
	cancelOld := mk(dispatch.StatusCancelled, old)
	doneAtCutoff := mk(dispatch.StatusCompleted, cutoff)
	doneNew := mk(dispatch.StatusCompleted, cutoff.Add(time.Minute))
	pendingOld := mk(dispatch.StatusPending, old)
	queuedOld := mk(dispatch.StatusQueued, old)
	runningOld := mk(dispatch.StatusInProgress, old)
	b.insertJobs(t, doneOld, errOld, cancelOld, doneAtCutoff, doneNew, pendingOld, queuedOld, runningOld)

	p := &dispatch.JobDeleteFinishedBeforeParams{Before: cutoff, Limit: 2}
	n, err := b.store.JobDeleteFinishedBefore(b.ctx, p)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	n, err = b.store.JobDeleteFinishedBefore(b.ctx, p)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	n, err = b.store.JobDeleteFinishedBefore(b.ctx, p)
	require.NoError(t, err)
	require.Zero(t, n)

	page, err := b.store.JobList(b.ctx, &dispatch.JobListParams{Limit: 100})
	require.NoError(t, err)
	require.ElementsMatch(t, jobIDs([]*dispatch.Job{doneAtCutoff, doneNew, pendingOld, queuedOld, runningOld}), jobIDs(page.Jobs))
}

// testJobConcurrentClaims races two claimants on each of several jobs, all
// at once (an adapter may commit concurrent updates together, and must
// still tell each caller its own outcome): of each pair exactly one wins,
// the other gets store.ErrConflict, and every job holds its winner's write
// and status event only.
func testJobConcurrentClaims(t *testing.T, newStore NewStoreFunc) {
	t.Helper()
	b := setup(t, newStore)
	const jobs, perJob = 8, 2
	all := make([]*dispatch.Job, jobs)
	for k := range all {
		all[k] = b.newJob(nil)
	}
	b.insertJobs(t, all...)
	ids := make([]string, jobs*perJob)
	for i := range ids {
		ids[i] = all[i%jobs].ID
	}
	errs, workers, versions := b.raceClaims(ids)

	for k, job := range all {
		winner := -1
		for i := k; i < jobs*perJob; i += jobs {
			if errs[i] == nil {
				require.Equal(t, -1, winner, "two claimants of job %d succeeded", k)
				require.Equal(t, int64(2), versions[i], "a winner's job carries the new version")
				winner = i
				continue
			}
			require.ErrorIs(t, errs[i], store.ErrConflict, "claimant %d of job %d", i, k)
			require.Equal(t, int64(1), versions[i], "a refused update leaves the version")
		}
		require.NotEqual(t, -1, winner, "no claimant of job %d succeeded", k)
		got, err := b.store.JobGetByID(b.ctx, job.ID)
		require.NoError(t, err)
		require.Equal(t, workers[winner], got.Worker)
		require.Equal(t, int64(2), got.Version)
		events, err := b.store.StatusEventListBySubject(b.ctx, job.ID)
		require.NoError(t, err)
		require.Len(t, events, 1, "only the winner's status event is stored")
	}
}

// raceClaims has claimant i claim job ids[i], every claimant reading its
// job before any writes, and returns each one's error, worker and the
// version its job copy ended with.
func (b *testBundle) raceClaims(ids []string) (errs []error, workers []string, versions []int64) {
	var read, done sync.WaitGroup
	start := make(chan struct{})
	errs, workers, versions = make([]error, len(ids)), make([]string, len(ids)), make([]int64, len(ids))
	read.Add(len(ids))
	done.Add(len(ids))
	for i, id := range ids {
		go func() {
			defer done.Done()
			j, err := b.store.JobGetByID(b.ctx, id)
			read.Done()
			if err != nil {
				errs[i] = err
				return
			}
			<-start // every claimant has read version 1 before anyone writes
			if err := j.Transition(dispatch.StatusInProgress, baseTime().Add(time.Second)); err != nil {
				errs[i] = err
				return
			}
			workers[i] = name("worker-%d", i)
			j.Worker = workers[i]
			j.LeaseExpiresAt = new(baseTime().Add(time.Minute))
			errs[i] = b.store.JobUpdate(b.ctx, &dispatch.JobUpdateParams{
				Job:    j,
				Events: []stream.Event{b.statusEvent(stream.TypeDispatchStarted, id, baseTime())},
			})
			versions[i] = j.Version
		}()
	}
	read.Wait()
	close(start)
	done.Wait()
	return errs, workers, versions
}
