package router_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/pool"
	"github.com/hooklane/hooklane/router"
)

// flightRecorder is a receiver that records when each request arrived and
// the most requests it ever had in flight at once.
type flightRecorder struct {
	mu       sync.Mutex
	hold     time.Duration
	inFlight int
	maxSeen  int
	arrivals []time.Time
}

func (f *flightRecorder) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	f.mu.Lock()
	f.inFlight++
	f.maxSeen = max(f.maxSeen, f.inFlight)
	f.arrivals = append(f.arrivals, time.Now())
	f.mu.Unlock()
	time.Sleep(f.hold) //nolint:forbidigo // simulated work, so that overlaps can happen
	f.mu.Lock()
	f.inFlight--
	f.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (g *gw) pool(code string, rate *float64, burst, concurrency int) *pool.Pool { //nolint:unparam // the pool definition in full; the tests so far use burst 1
	g.t.Helper()
	now := time.Now().UTC()
	p := &pool.Pool{
		ID: g.ids.New(), Code: code, Name: code, RatePerSecond: rate, Burst: burst,
		Concurrency: concurrency, CreatedAt: now, UpdatedAt: now,
	}
	require.NoError(g.t, g.st.PoolInsert(context.Background(), p))
	return p
}

// TestPoolRate: a pool at 20/s starts at most 20 deliveries a second over
// 10 s (+ 10 %), and never more than its concurrency at once. The lower
// bound is loose: a loaded machine delivers fewer (CI saw 154), never more.
func TestPoolRate(t *testing.T) {
	t.Parallel()
	rec := &flightRecorder{hold: 5 * time.Millisecond}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	g := newGW(t, gwOptions{})
	p := g.pool("rated", new(20.0), 1, 4)
	var jobs []*dispatch.Job
	for range 260 {
		j := g.taskJob(srv.URL, dispatch.ModeImmediate, "", dispatch.Retry{MaxAttempts: 1})
		j.DispatchPoolID = p.ID
		jobs = append(jobs, j)
	}
	g.submit(jobs...)
	require.Eventually(t, func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.arrivals) > 0 && time.Since(rec.arrivals[0]) > 11*time.Second
	}, 60*time.Second, 100*time.Millisecond)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	start := rec.arrivals[0]
	n := 0
	for _, a := range rec.arrivals {
		if a.Sub(start) < 10*time.Second {
			n++
		}
	}
	t.Logf("deliveries in the first 10 s: %d (max in flight %d)", n, rec.maxSeen)
	require.LessOrEqual(t, n, 220, "rate over 10 s: the pool's 20/s is never exceeded")
	require.GreaterOrEqual(t, n, 100, "rate over 10 s: the pool is not throttled far below its rate")
	require.LessOrEqual(t, rec.maxSeen, 4)
}

// TestPoolConcurrency: a pool never has more requests in flight than its
// concurrency, and does use all of it.
func TestPoolConcurrency(t *testing.T) {
	t.Parallel()
	rec := &flightRecorder{hold: 30 * time.Millisecond}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	g := newGW(t, gwOptions{})
	p := g.pool("narrow", nil, 1, 3)
	var jobs []*dispatch.Job
	for range 60 {
		j := g.taskJob(srv.URL, dispatch.ModeImmediate, "", dispatch.Retry{MaxAttempts: 1})
		j.DispatchPoolID = p.ID
		jobs = append(jobs, j)
	}
	g.submit(jobs...)
	g.waitAll(jobs, dispatch.StatusCompleted, 60*time.Second)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Equal(t, 3, rec.maxSeen)
}

// TestSlowPoolDoesNotStarveOthers: a pool whose target never answers (until
// the test ends) holds only its share of a small router; the default pool's
// jobs still complete.
func TestSlowPoolDoesNotStarveOthers(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusOK)
	}))
	fast := httptest.NewServer(&flightRecorder{})
	g := newGW(t, gwOptions{maxInFlight: 8})
	t.Cleanup(func() {
		close(release)
		g.stop()
		slow.Close()
		fast.Close()
	})
	sp := g.pool("slow", nil, 1, 8)
	var stuck, quick []*dispatch.Job
	for range 40 {
		j := g.taskJob(slow.URL, dispatch.ModeImmediate, "", dispatch.Retry{MaxAttempts: 1})
		j.DispatchPoolID = sp.ID
		j.TimeoutSeconds = 60
		stuck = append(stuck, j)
	}
	g.submit(stuck...)
	// Let the slow pool take what it can.
	require.Eventually(t, func() bool {
		c, err := g.counts(stuck)
		return err == nil && c[dispatch.StatusInProgress] >= 6
	}, 60*time.Second, 20*time.Millisecond)
	for range 20 {
		quick = append(quick, g.taskJob(fast.URL, dispatch.ModeImmediate, "", dispatch.Retry{MaxAttempts: 1}))
	}
	g.submit(quick...)
	g.waitAll(quick, dispatch.StatusCompleted, 30*time.Second)
	c, err := g.counts(stuck)
	require.NoError(t, err)
	require.LessOrEqual(t, c[dispatch.StatusInProgress], 6, "the slow pool took more than its share: %v", c)
}

// TestPoolsPickUpPatchedDefinition: after Invalidate (the API's
// PoolChangedFunc), the runtime pool is rebuilt from the stored definition;
// a deleted pool's jobs fall back to the default pool.
func TestPoolsPickUpPatchedDefinition(t *testing.T) {
	t.Parallel()
	g := newGW(t, gwOptions{noRouter: true})
	ctx := context.Background()
	p := g.pool("patched", nil, 1, 1)
	rt, err := g.pools.Get(ctx, p.ID)
	require.NoError(t, err)
	require.Equal(t, 1, rt.Definition().Concurrency)

	p.Concurrency, p.RatePerSecond = 5, new(2.0)
	require.NoError(t, g.st.PoolUpdate(ctx, p))
	same, err := g.pools.Get(ctx, p.ID)
	require.NoError(t, err)
	require.Equal(t, 1, same.Definition().Concurrency, "cached until invalidated")
	g.pools.Invalidate(p.ID)
	fresh, err := g.pools.Get(ctx, p.ID)
	require.NoError(t, err)
	require.Equal(t, 5, fresh.Definition().Concurrency)
	require.InDelta(t, 2.0, *fresh.Definition().RatePerSecond, 0)

	require.NoError(t, g.st.PoolDelete(ctx, p.ID))
	g.pools.Invalidate(p.ID)
	fallback, err := g.pools.Get(ctx, p.ID)
	require.NoError(t, err)
	require.Equal(t, pool.DefaultPoolCode, fallback.Definition().Code)
}

// TestDelayedJobWaitsPending: a job stored PENDING with a future
// NextAttemptAt (how ingest stores a subscription's delaySeconds) is not
// delivered before it is due, and is delivered by the pending poller after.
func TestDelayedJobWaitsPending(t *testing.T) {
	t.Parallel()
	arrived := make(chan time.Time, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		arrived <- time.Now()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	g := newGW(t, gwOptions{})
	j := g.taskJob(srv.URL, dispatch.ModeImmediate, "", dispatch.Retry{})
	due := time.Now().Add(1500 * time.Millisecond).UTC()
	j.Status, j.NextAttemptAt = dispatch.StatusPending, &due
	require.NoError(t, g.st.JobInsertMany(context.Background(), &dispatch.JobInsertManyParams{Jobs: []*dispatch.Job{j}}))
	g.waitStatus(j.ID, dispatch.StatusCompleted, 60*time.Second)
	at := <-arrived
	require.False(t, at.Before(due), "delivered %s before it was due", due.Sub(at))
}

// TestBusyPoolKeepsItsSlotsBusy fills a narrow pool far past what the
// router holds for it: the messages it cannot hold go back to the queue,
// for about as long as the work it holds takes to drain; the pool's
// concurrency is never exceeded. (The receiver's arrival gaps are logged:
// see the end of the test for why they are not asserted.)
//
// Nor does the router spin on that backlog: a message put back for a
// busy pool keeps its share of the router's capacity out of the receive
// loop until the pool frees room (or 100 ms pass). Before, the capacity
// outside the pool's share received, decoded and put back the waiting
// messages over and over (7 to 8 receives per delivered job here, 10 per
// webhook in `hooklane bench`'s batched ingest); now each freed hold and
// each 100 ms of each capacity unit outside the share allow one receive.
func TestBusyPoolKeepsItsSlotsBusy(t *testing.T) {
	t.Parallel()
	rec := &flightRecorder{hold: 10 * time.Millisecond}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	var received atomic.Int64
	g := newGW(t, gwOptions{maxInFlight: 64, poolBusyDelay: router.PoolBusyDelayDefault, received: &received})
	p := g.pool("busy", nil, 1, 4)
	var jobs []*dispatch.Job
	for range 400 {
		j := g.taskJob(srv.URL, dispatch.ModeImmediate, "", dispatch.Retry{MaxAttempts: 1})
		j.DispatchPoolID = p.ID
		jobs = append(jobs, j)
	}
	submitted := time.Now()
	g.submit(jobs...)
	g.waitAll(jobs, dispatch.StatusCompleted, 120*time.Second)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	// Receives allowed: the jobs' own, one per freed hold, and one per
	// 100 ms for each of the 16 units of capacity outside the pool's share
	// of 48 (3/4 of 64), doubled for slack.
	elapsed := time.Since(submitted)
	allowed := 2*int64(len(jobs)) + 2*16*int64(elapsed/(100*time.Millisecond)+1)
	require.LessOrEqual(t, received.Load(), allowed, "the router received the busy pool's backlog over and over (%s)", elapsed)
	arrivals := slices.Clone(rec.arrivals)
	slices.SortFunc(arrivals, func(a, b time.Time) int { return a.Compare(b) })
	var worst time.Duration
	long := 0 // gaps of nearly the old fixed put-back delay
	for i := 1; i < len(arrivals); i++ {
		gap := arrivals[i].Sub(arrivals[i-1])
		if gap > 100*time.Millisecond {
			t.Logf("gap of %s after arrival %d", gap, i)
		}
		if gap >= 900*time.Millisecond {
			long++
		}
		worst = max(worst, gap)
	}
	t.Logf("400 deliveries through 4 slots in %s, largest gap between arrivals %s, %d gaps of 900 ms or more, max in flight %d, %d messages received",
		arrivals[len(arrivals)-1].Sub(arrivals[0]), worst, long, rec.maxSeen, received.Load())
	require.LessOrEqual(t, rec.maxSeen, 4)
	// The gaps are logged, not asserted: a check that at most two gaps
	// reach 900 ms failed on a loaded CI machine (3 stalls of 0.9–1.1 s
	// among 12 of 300–900 ms, the router package beside the whole suite)
	// and passed with the put-back delay fixed at PoolBusyDelay again (no
	// gap at all: the queue's visible backlog keeps the slots fed while the
	// messages put back wait), so it told nothing. A test of the put-back
	// delay itself needs a backlog made only of put-back messages.
}
