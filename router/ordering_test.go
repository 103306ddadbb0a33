package router_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/stream"
)

// orderReceiver is a receiver that fails a random share of first attempts
// and logs every request: which job (by its index in its group), which
// attempt, and whether two requests of a group were ever in flight at once.
type orderReceiver struct {
	mu        sync.Mutex
	rnd       *rand.Rand
	failShare float64
	index     map[string]int // webhook-id → index in its group
	group     map[string]string
	inFlight  map[string]int
	overlap   []string
	// firstAttempts and successes list job indexes per group in arrival
	// order.
	firstAttempts map[string][]int
	successes     map[string][]int
	succeeded     map[string]bool
	// early lists requests of a job that came before the previous job of
	// its group had succeeded.
	early []string
}

func newOrderReceiver(failShare float64) *orderReceiver {
	return &orderReceiver{
		rnd: rand.New(rand.NewPCG(1, 2)), failShare: failShare,
		index: map[string]int{}, group: map[string]string{}, inFlight: map[string]int{},
		firstAttempts: map[string][]int{}, successes: map[string][]int{}, succeeded: map[string]bool{},
	}
}

func (o *orderReceiver) register(j *dispatch.Job, i int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.index[j.ID] = i
	o.group[j.ID] = j.MessageGroup
}

func (o *orderReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("webhook-id")
	attempt, _ := strconv.Atoi(r.Header.Get("hooklane-attempt"))
	o.mu.Lock()
	g, i := o.group[id], o.index[id]
	o.inFlight[g]++
	if o.inFlight[g] > 1 {
		o.overlap = append(o.overlap, fmt.Sprintf("group %s job %d", g, i))
	}
	if attempt == 1 {
		o.firstAttempts[g] = append(o.firstAttempts[g], i)
	}
	if i > 0 && !o.succeeded[g+"/"+strconv.Itoa(i-1)] {
		o.early = append(o.early, fmt.Sprintf("group %s job %d attempt %d", g, i, attempt))
	}
	fail := attempt == 1 && o.rnd.Float64() < o.failShare
	o.mu.Unlock()

	// Hold the request briefly so that overlapping deliveries would show.
	time.Sleep(time.Millisecond) //nolint:forbidigo // the receiver's work: the sleep is what is measured against

	o.mu.Lock()
	o.inFlight[g]--
	if !fail && !o.succeeded[g+"/"+strconv.Itoa(i)] {
		o.succeeded[g+"/"+strconv.Itoa(i)] = true
		o.successes[g] = append(o.successes[g], i)
	}
	o.mu.Unlock()
	if fail {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

const (
	orderGroups    = 100
	orderPerGroup  = 20
	orderFailShare = 0.2
)

// runOrdering submits groups × perGroup jobs of mode, interleaving the
// groups as an ingest stream would, and waits until every job completed.
func runOrdering(t *testing.T, mode dispatch.Mode) (*orderReceiver, *gw) {
	t.Helper()
	rcv := newOrderReceiver(orderFailShare)
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	g := newGW(t, gwOptions{})
	retry := dispatch.Retry{MaxAttempts: 10, InitialBackoffSeconds: 1, MaxBackoffSeconds: 1}
	var jobs []*dispatch.Job
	for i := range orderPerGroup {
		for grp := range orderGroups {
			j := g.taskJob(srv.URL, mode, "g"+strconv.Itoa(grp), retry)
			rcv.register(j, i)
			jobs = append(jobs, j)
		}
	}
	g.submit(jobs...)
	// Generous: alone this takes ~45 s; beside the rest of `make test` on
	// two cores CI has seen it past 150 s with every group still moving.
	g.waitAll(jobs, dispatch.StatusCompleted, 5*time.Minute)
	return rcv, g
}

func requireAscending(t *testing.T, what string, perGroup map[string][]int) {
	t.Helper()
	require.Len(t, perGroup, orderGroups, what)
	for g, seq := range perGroup {
		require.Len(t, seq, orderPerGroup, "%s of group %s: %v", what, g, seq)
		for i, v := range seq {
			require.Equal(t, i, v, "%s of group %s out of order: %v", what, g, seq)
		}
	}
}

func TestOrderingNextOnError(t *testing.T) {
	t.Parallel()
	rcv, _ := runOrdering(t, dispatch.ModeNextOnError)
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	require.Empty(t, rcv.overlap, "two deliveries of a group in flight at once")
	requireAscending(t, "first attempts", rcv.firstAttempts)
	// Failures leave the line: some job was delivered before its failed
	// predecessor succeeded (else this mode would not differ from BLOCK).
	require.NotEmpty(t, rcv.early, "a failing job never let the next one proceed")
}

func TestOrderingBlockOnError(t *testing.T) {
	t.Parallel()
	rcv, g := runOrdering(t, dispatch.ModeBlockOnError)
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	require.Empty(t, rcv.overlap, "two deliveries of a group in flight at once")
	require.Empty(t, rcv.early, "a job was delivered before its predecessor succeeded")
	requireAscending(t, "first successful deliveries", rcv.successes)
	// Held jobs were visible as blocked: a dispatch.blocked status event
	// names the blocker.
	blocked := 0
	for id := range rcv.index {
		evs, err := g.st.StatusEventListBySubject(context.Background(), id)
		require.NoError(t, err)
		for _, ev := range evs {
			if ev.Type == stream.TypeDispatchBlocked {
				require.NotEmpty(t, ev.Data.BlockedBy)
				blocked++
			}
		}
	}
	require.Positive(t, blocked, "no job was ever held as blocked")
}

// TestImmediateRunsInParallel shows real parallelism: the receiver answers
// only once every job of one message group is in flight at the same time.
func TestImmediateRunsInParallel(t *testing.T) {
	t.Parallel()
	const n = 8
	var mu sync.Mutex
	inFlight := 0
	all := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inFlight++
		if inFlight == n {
			close(all)
		}
		mu.Unlock()
		// Held until all are in flight, or until the delivery gives up:
		// the jobs allow a minute, since on a loaded machine the eighth
		// request can come seconds after the first.
		select {
		case <-all:
			w.WriteHeader(http.StatusOK)
		case <-r.Context().Done():
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	g := newGW(t, gwOptions{})
	var jobs []*dispatch.Job
	for range n {
		j := g.taskJob(srv.URL, dispatch.ModeImmediate, "same-group", dispatch.Retry{MaxAttempts: 1})
		j.TimeoutSeconds = 60
		jobs = append(jobs, j)
	}
	g.submit(jobs...)
	for _, j := range jobs {
		done := g.waitStatus(j.ID, dispatch.StatusCompleted, 90*time.Second)
		require.Equal(t, 1, done.AttemptCount)
	}
}

// TestLostHeadIsSentAgain covers the first job of a group whose message
// never reached the queue (its sender died between the store write and the
// send) while the next job's did: the router, holding the next job back,
// sends the lost one again, and both are delivered in order without waiting
// for the stale-queued rescuer (not running here).
func TestLostHeadIsSentAgain(t *testing.T) {
	t.Parallel()
	for _, mode := range []dispatch.Mode{dispatch.ModeNextOnError, dispatch.ModeBlockOnError} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var arrivals []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				arrivals = append(arrivals, r.Header.Get("webhook-id"))
				mu.Unlock()
				w.WriteHeader(http.StatusNoContent)
			}))
			t.Cleanup(srv.Close)
			g := newGW(t, gwOptions{})
			retry := dispatch.Retry{MaxAttempts: 3, InitialBackoffSeconds: 1, MaxBackoffSeconds: 1}
			lost := g.taskJob(srv.URL, mode, "g", retry)
			// Stored a minute ago, never sent.
			lost.UpdatedAt = lost.UpdatedAt.Add(-time.Minute)
			require.NoError(t, g.st.JobInsertMany(context.Background(), &dispatch.JobInsertManyParams{Jobs: []*dispatch.Job{lost}}))
			next := g.taskJob(srv.URL, mode, "g", retry)
			g.submit(next)

			g.waitStatus(lost.ID, dispatch.StatusCompleted, 30*time.Second)
			g.waitStatus(next.ID, dispatch.StatusCompleted, 30*time.Second)
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, []string{lost.ID, next.ID}, arrivals)
		})
	}
}
