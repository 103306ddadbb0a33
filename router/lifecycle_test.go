package router_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
)

// TestBlockHoldsAfterErrorUntilOperatorRetry: a job that ends in ERROR
// holds its BLOCK_ON_ERROR group; the later jobs are parked with blockedBy
// (not retried in a loop: the safety poll is an hour away) and go out in
// order, at once, after the operator retries the failed job.
func TestBlockHoldsAfterErrorUntilOperatorRetry(t *testing.T) {
	t.Parallel()
	var healthy atomic.Bool
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("webhook-id")+"#"+r.Header.Get("hooklane-attempt"))
		mu.Unlock()
		if !healthy.Load() {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	g := newGW(t, gwOptions{blockedRecheck: time.Hour})
	var jobs []*dispatch.Job
	for range 3 {
		jobs = append(jobs, g.taskJob(srv.URL, dispatch.ModeBlockOnError, "order:1", dispatch.Retry{MaxAttempts: 3}))
	}
	g.submit(jobs...)
	g.waitStatus(jobs[0].ID, dispatch.StatusError, 60*time.Second)
	for _, j := range jobs[1:] {
		require.Eventually(t, func() bool {
			got := g.job(j.ID)
			return got.Status == dispatch.StatusPending && got.BlockedBy == jobs[0].ID
		}, 60*time.Second, 10*time.Millisecond)
		got := g.job(j.ID)
		require.Zero(t, got.AttemptCount)
		require.True(t, got.NextAttemptAt.After(time.Now().Add(50*time.Minute)), "parked far, not polled")
	}

	// The operator retries the failed job (what POST .../retry does).
	healthy.Store(true)
	failed := g.job(jobs[0].ID)
	now := time.Now().UTC()
	require.NoError(t, failed.Transition(dispatch.StatusPending, now))
	failed.MaxAttempts += 3
	failed.NextAttemptAt = &now
	require.NoError(t, g.st.JobUpdate(context.Background(), &dispatch.JobUpdateParams{Job: failed}))

	g.waitAll(jobs, dispatch.StatusCompleted, 60*time.Second)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{jobs[0].ID + "#1", jobs[0].ID + "#2", jobs[1].ID + "#1", jobs[2].ID + "#1"}, seen)
	require.Empty(t, g.job(jobs[2].ID).BlockedBy)
}

// TestShutdown: on stop the router finishes the delivery in flight and
// hands back a claimed job that had not started (waiting for its pool's
// only slot): it is PENDING again, due at once, its attempt not counted.
func TestShutdown(t *testing.T) {
	t.Parallel()
	entered := make(chan string, 2)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- r.Header.Get("webhook-id")
		<-release
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	g := newGW(t, gwOptions{})
	p := g.pool("single", nil, 1, 1)
	a := g.taskJob(srv.URL, dispatch.ModeImmediate, "", dispatch.Retry{})
	b := g.taskJob(srv.URL, dispatch.ModeImmediate, "", dispatch.Retry{})
	a.DispatchPoolID, b.DispatchPoolID = p.ID, p.ID
	g.submit(a, b)
	first := <-entered
	waiting := a.ID
	if first == a.ID {
		waiting = b.ID
	}
	g.waitStatus(waiting, dispatch.StatusInProgress, 60*time.Second) // claimed, waiting for the slot

	stopped := make(chan struct{})
	go func() {
		g.stop()
		close(stopped)
	}()
	handed := g.waitStatus(waiting, dispatch.StatusPending, 60*time.Second)
	require.Zero(t, handed.AttemptCount, "a hand-back is not an attempt")
	require.NotNil(t, handed.NextAttemptAt)
	select {
	case <-stopped:
		t.Fatal("stop returned while a delivery was in flight")
	default:
	}
	close(release)
	<-stopped
	done := g.job(first)
	require.Equal(t, dispatch.StatusCompleted, done.Status, "the delivery in flight finished")
	require.Equal(t, 1, done.AttemptCount)
}
