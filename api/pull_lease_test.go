package api_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/pollers"
	"github.com/hooklane/hooklane/router/pull"
)

// TestPullDeadWorkerLosesJobAfterLease: a worker that claims a job and then
// goes silent (no heartbeat, no report) loses it once its lease expires:
// the rescuer returns it to the line recording ABANDONED, another worker
// claims it, and the dead worker's late report is refused.
func TestPullDeadWorkerLosesJobAfterLease(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, func(c *serverConfig) {
		c.Pull = pull.New(pull.Config{Store: c.DB, Lifecycle: c.Jobs.(pull.Lifecycle), Lease: time.Second})
	})
	createType(t, s, "order.created")
	sub := pullSub(t, s, "IMMEDIATE", 5)
	job := ingestOrder(t, s, "dead-1")

	status, items := claim(t, s, sub, "dead-worker", "")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, []string{job}, claimedIDs(items))

	// Nothing returns the job while the lease runs.
	status, _ = claim(t, s, sub, "live-worker", "")
	require.Equal(t, http.StatusNoContent, status)

	ctx := context.Background()
	rescuer := pollers.NewRescuer(pollers.RescuerConfig{Jobs: s.Config.Jobs.(pollers.Jobs)})
	moved, err := rescuer.RescueExpired(ctx, time.Now().Add(2*time.Second))
	require.NoError(t, err)
	require.Equal(t, 1, moved)
	// The lost attempt counts as a failed one: the job waits its backoff.
	rescued, err := s.Store.JobGetByID(ctx, job)
	require.NoError(t, err)
	require.Equal(t, dispatch.StatusPending, rescued.Status)
	require.NotNil(t, rescued.NextAttemptAt)
	require.True(t, rescued.NextAttemptAt.After(time.Now()), "an abandoned attempt retries after the backoff")
	setJob(t, s, job, func(j *dispatch.Job) { past := time.Now().Add(-time.Second); j.NextAttemptAt = &past })
	pending := pollers.NewPending(pollers.PendingConfig{Jobs: s.Config.Jobs.(pollers.Jobs)})
	queued, err := pending.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, queued)

	status, items = claim(t, s, sub, "live-worker", "")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, []string{job}, claimedIDs(items))

	st, _ := report(t, s, job, "complete", "dead-worker")
	require.Equal(t, http.StatusConflict, st, "the dead worker no longer holds the job")
	st, got := report(t, s, job, "complete", "live-worker")
	require.Equal(t, http.StatusOK, st, got)

	stored, err := s.Store.JobGetByID(ctx, job)
	require.NoError(t, err)
	require.Equal(t, dispatch.StatusCompleted, stored.Status)
	actions := make([]string, 0, len(stored.Attempts))
	for _, a := range stored.Attempts {
		actions = append(actions, a.Action+":"+a.Worker)
	}
	require.True(t, slices.Contains(actions, dispatch.ActionAbandoned+":dead-worker"), "attempts: %v", actions)
	require.Equal(t, dispatch.ActionCompleted+":live-worker", actions[len(actions)-1], "attempts: %v", actions)
}

// BenchmarkPullLongPollLatency measures how soon a long-polling worker
// receives a newly ingested event: the time from the POST of the event to
// the claim's answer. Reports p50 and p99 in milliseconds.
func BenchmarkPullLongPollLatency(b *testing.B) {
	s := newTestServer(b, func(c *serverConfig) {
		c.Pull = pull.New(pull.Config{Store: c.DB, Lifecycle: c.Jobs.(pull.Lifecycle), Lease: time.Minute})
	})
	createType(b, s, "order.created")
	sub := pullSub(b, s, "IMMEDIATE", 1)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		got := make(chan time.Time, 1)
		go func() {
			resp, _, err := s.send(b.Context(), http.MethodGet, claimPath(sub, "bench", "&wait=10s"), nil)
			if err == nil && resp.StatusCode == http.StatusOK {
				got <- time.Now()
				return
			}
			got <- time.Time{}
		}()
		// Let the claim reach its wait before the event arrives.
		time.Sleep(20 * time.Millisecond) //nolint:forbidigo // a benchmark's worker is registered from its first claim on, so no signal tells that this claim is parked
		start := time.Now()
		job := ingestOrder(b, s, "lat-"+time.Now().Format("150405.000000000"))
		end := <-got
		if end.IsZero() {
			b.Fatalf("claim got nothing for job %s", job)
		}
		lat = append(lat, end.Sub(start))
		report(b, s, job, "complete", "bench")
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
