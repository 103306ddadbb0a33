package mongostore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/storage/mongostore"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/stream"
)

// jobWriteCase is one JobUpdate of TestConcurrentJobUpdatesShareABulkWrite.
type jobWriteCase struct {
	job  *dispatch.Job
	want error
}

// claim returns a claim of a copy of job, read at version.
func (b *testBundle) claim(job *dispatch.Job, version int64, worker string) *dispatch.Job {
	c := *job
	c.Version = version
	c.Status = dispatch.StatusInProgress
	c.Worker = worker
	return &c
}

// TestConcurrentJobUpdatesShareABulkWrite: on MongoDB's path (version
// filtered updates; FerretDB's write guards turned off, the writes here
// never race) JobUpdate calls that overlap are committed by one
// bulkWrite, and each caller learns its own outcome — when the bulkWrite
// matches fewer, the callers whose job had moved on or is gone get
// store.ErrStale or store.ErrNotFound and the others succeed; two writes
// of one job never share a bulkWrite, so the later of two from the same
// version is refused. (Under write guards, FerretDB's path, each replace
// is sent alone: TestOnCommandFuncNamesGuardCommandsApart.)
func TestConcurrentJobUpdatesShareABulkWrite(t *testing.T) {
	t.Parallel()
	b := setup(t)
	counter := &commandCounter{n: map[string]int{}}
	s := b.env.open(t, b.env.newDatabase(t), func(cfg *mongostore.Config) {
		cfg.OnCommandFunc = counter.add
		cfg.StatusRelayInterval = relayIdle
	})
	s.SetHoldStatusEvents(true)
	s.SetWriteGuards(false)

	const plain = 6
	var jobs []*dispatch.Job
	for range plain + 2 {
		jobs = append(jobs, b.newJob(""))
	}
	require.NoError(t, s.JobInsertMany(b.ctx, &dispatch.JobInsertManyParams{Jobs: jobs}))
	var cases []jobWriteCase
	for i := range plain {
		cases = append(cases, jobWriteCase{job: b.claim(jobs[i], 1, "w-plain")})
	}
	// Two claims of one job from version 1: the first queued wins.
	twin := jobs[plain]
	missing := b.newJob("")
	cases = append(cases,
		jobWriteCase{job: b.claim(twin, 1, "w-first")},
		jobWriteCase{job: b.claim(twin, 1, "w-second"), want: store.ErrStale},
		// Refused by the filters of the shared update, told apart by
		// reading the jobs back.
		jobWriteCase{job: b.claim(jobs[plain+1], 7, "w-stale"), want: store.ErrStale},
		jobWriteCase{job: b.claim(missing, 1, "w-missing"), want: store.ErrNotFound})

	s.PauseJobCommits()
	errs := make([]error, len(cases))
	var wg sync.WaitGroup
	for i, c := range cases {
		if i == plain+1 {
			// The twin's second claim queues after its first.
			require.Eventually(t, func() bool { return s.QueuedJobWrites() == plain+1 }, 30*time.Second, time.Millisecond)
		}
		wg.Go(func() {
			started := c.job.StatusEvent(b.ids.New(), stream.TypeDispatchStarted, baseTime())
			errs[i] = s.JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: c.job, Events: []stream.Event{started}})
		})
	}
	require.Eventually(t, func() bool { return s.QueuedJobWrites() == len(cases) }, 30*time.Second, time.Millisecond)
	counter.take()
	s.ResumeJobCommits(context.WithoutCancel(b.ctx))
	wg.Wait()
	require.Equal(t, map[string]int{"update": 2, "find": 2}, counter.take(),
		"one update for every job's first write, a find to tell the refused apart; the same for the twin's second")

	for i, c := range cases {
		if c.want == nil {
			require.NoError(t, errs[i], "write %d", i)
			require.Equal(t, int64(2), c.job.Version, "write %d", i)
			got, err := s.JobGetByID(b.ctx, c.job.ID)
			require.NoError(t, err)
			require.Equal(t, c.job.Worker, got.Worker)
			continue
		}
		require.ErrorIs(t, errs[i], c.want, "write %d", i)
		require.Equal(t, c.job.Version, map[bool]int64{true: 7, false: 1}[c.job.Worker == "w-stale"], "a refused write leaves the version")
	}
}
