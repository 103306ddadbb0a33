package main

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
)

// The rolling-restart fault test of issue 32: two gateways on one MongoDB
// (a private FerretDB) and one default-attribute SQS FIFO queue (fauxqs)
// take a paced load of events over 20 message groups, a third of the
// groups in each ordering mode, while they are restarted as an
// orchestrator rolls a deployment — SIGTERM A, start it again, wait until
// healthy, SIGTERM B, the same — and then crash: kill -9 A, start it
// again. From the receivers' logs it checks that no accepted event is
// lost, that each ordered group kept its order, and how long any event
// waited beyond its due time around each fault.

// rollingModes are the ordering modes; group g is in rollingModes[g%3].
var rollingModes = [...]string{"IMMEDIATE", "NEXT_ON_ERROR", "BLOCK_ON_ERROR"} //nolint:gochecknoglobals // read-only test fixture

// rollingSettings are the short settings the bounds are stated in.
const (
	rollingVisibility = 5 * time.Second // HOOKLANE_RECEIVE_VISIBILITY
	rollingLease      = 5 * time.Second // HOOKLANE_LEASE
	rollingTimeout    = 2 * time.Second // the subscriptions' timeoutSeconds
	rollingReceive    = 5 * time.Second // the router's receive wait (router.ReceiveWaitDefault)
	// ferretGuardStale is how long FerretDB's write guard of a killed
	// writer holds (storage/mongostore/guard.go).
	ferretGuardStale = 30 * time.Second
	// orderedBackoffMax is the longest back-off of a job whose group head
	// does not move (README, Guarantees).
	orderedBackoffMax = 10 * time.Second
)

// rollingFault is one fault the test caused, and when.
type rollingFault struct {
	name string
	at   time.Time
	// bound is the longest an event due around it may wait beyond its
	// due time.
	bound time.Duration
	// worst is the longest wait beyond due of an event first delivered
	// after this fault and before the next, and its id.
	worst   time.Duration
	worstID string
}

// rollingInstance is one of the two gateway slots; the process in it is
// replaced by each restart, and is nil while it is down.
type rollingInstance struct {
	name string
	cur  atomic.Pointer[process]
	n    int
}

func TestRollingRestartMongoSQS(t *testing.T) {
	t.Parallel()
	// 600 events by default, 30 per group: a run of about two minutes on
	// the shared 2-core development machine, where FerretDB is the
	// bottleneck; the 2,000 with HOOKLANE_TEST_ROLLING_EVENTS=2000
	// on a machine that is not shared.
	events := envInt("HOOKLANE_TEST_ROLLING_EVENTS", 600)
	ratePerSec := envInt("HOOKLANE_TEST_ROLLING_RATE", 20)
	const (
		groups  = 20
		posters = 4
		batch   = 5
	)
	perGroup := events / groups

	_, mongoAddr := startPrivateFerretDB(t)
	_, sqsEndpoint := stackEnv()
	bin := hooklaneBinary.get(t)
	env := sqsEnv(sqsEndpoint, newDefaultFIFOQueue(t, sqsClient(sqsEndpoint)))
	maps.Copy(env, map[string]string{
		"HOOKLANE_MONGO_URI":             "mongodb://" + mongoAddr + "/",
		"HOOKLANE_MONGO_DATABASE":        "hooklane_rolling_" + faultSuffix(),
		"HOOKLANE_ALLOW_PRIVATE_TARGETS": "true",
		"HOOKLANE_RECEIVE_VISIBILITY":    rollingVisibility.String(),
		"HOOKLANE_LEASE":                 rollingLease.String(),
		"HOOKLANE_SHUTDOWN_DRAIN":        "10s",
		"HOOKLANE_STALE_QUEUED_AFTER":    "10s",
		"HOOKLANE_STALE_POLL_INTERVAL":   "2s",
		"HOOKLANE_LEASE_POLL_INTERVAL":   "1s",
		"HOOKLANE_PENDING_POLL_INTERVAL": "1s",
		"HOOKLANE_LOG_LEVEL":             "warn",
	})
	instances := []*rollingInstance{{name: "a"}, {name: "b"}}
	start := func(in *rollingInstance) {
		in.n++
		in.cur.Store(startProcess(t, bin, in.name+strconv.Itoa(in.n), env))
	}
	for _, in := range instances {
		start(in)
	}
	ctx := t.Context()
	a := instances[0].cur.Load()

	recvs := map[string]*groupReceiver{}
	for _, mode := range rollingModes {
		recvs[mode] = newGroupReceiver(t)
		typ := "rolling." + strings.ToLower(mode)
		status, body := a.post(ctx, "/api/event-types", "application/json", `{"code":"`+typ+`","name":"rolling"}`)
		require.Equal(t, http.StatusCreated, status, "%s", body)
		status, body = a.post(ctx, "/api/subscriptions", "application/json", `{"code":"rolling-`+strings.ToLower(mode)+`","mode":"`+mode+`",
			"timeoutSeconds":`+strconv.Itoa(int(rollingTimeout.Seconds()))+`,"retry":{"maxAttempts":30,"initialBackoffSeconds":1,"maxBackoffSeconds":3},
			"eventTypes":[{"eventTypeCode":"`+typ+`"}],"target":"`+recvs[mode].srv.URL+`"}`)
		require.Equal(t, http.StatusCreated, status, "%s", body)
	}
	// Both instances match every type before the load: a probe event per
	// instance and type gets its job once the instance's cache has the
	// subscription.
	for _, in := range instances {
		p := in.cur.Load()
		for _, mode := range rollingModes {
			id := "probe-" + in.name + "-" + strings.ToLower(mode)
			var last string
			for try := 0; ; try++ {
				// Each try its own id: a duplicate's answer is the first one's.
				st, b := p.post(ctx, "/api/events", "application/cloudevents+json", fmt.Sprintf(
					`{"specversion":"1.0","id":"%[1]s-%[2]d","source":"/rolling","type":"rolling.%[3]s","messagegroup":"%[1]s-%[2]d","data":{"seq":1}}`, id, try, strings.ToLower(mode)))
				if (st == http.StatusCreated || st == http.StatusOK) && strings.Contains(string(b), `"subscription":"rolling-`) {
					break
				}
				last = fmt.Sprintf("%d %s", st, b)
				require.Less(t, try, 300, "instance %s never matched %s: %s", in.name, mode, last)
				select {
				case <-ctx.Done():
				case <-time.After(200 * time.Millisecond):
				}
			}
		}
	}

	// The load: each poster owns whole groups and posts each group's events
	// in order, in batches, to the instance of the group's parity while it
	// is up, else to the other; a refused or failed batch is posted again.
	var (
		acceptedMu sync.Mutex
		acceptedAt = make(map[string]time.Time, events)
		accepted   atomic.Int64
	)
	limiter := rate.NewLimiter(rate.Limit(ratePerSec), batch)
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		var wg sync.WaitGroup
		for w := range posters {
			wg.Go(func() {
				for first := 1; first <= perGroup; first += batch {
					for g := w; g < groups; g += posters {
						typ := "rolling." + strings.ToLower(rollingModes[g%3])
						var items, ids []string
						for seq := first; seq < first+batch && seq <= perGroup; seq++ {
							id := fmt.Sprintf("g%d-%d", g, seq)
							ids = append(ids, id)
							items = append(items, fmt.Sprintf(`{"specversion":"1.0","id":%q,"source":"/rolling","type":%q,"messagegroup":"g%d","data":{"seq":%d}}`, id, typ, g, seq))
						}
						if limiter.WaitN(ctx, len(items)) != nil {
							return
						}
						body := "[" + strings.Join(items, ",") + "]"
						for try := 0; ctx.Err() == nil; try++ {
							p := instances[(g+try)%2].cur.Load()
							if p == nil {
								continue // restarting: the other one
							}
							rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
							st, _, _ := p.request(rctx, http.MethodPost, "/api/events", "application/cloudevents-batch+json", body)
							cancel()
							if st == http.StatusCreated || st == http.StatusOK {
								now := time.Now()
								acceptedMu.Lock()
								for _, id := range ids {
									acceptedAt[id] = now
								}
								acceptedMu.Unlock()
								accepted.Add(int64(len(ids)))
								break
							}
							select { // an instance stopping or just killed: the other
							case <-ctx.Done():
							case <-time.After(50 * time.Millisecond):
							}
						}
					}
				}
			})
		}
		wg.Wait()
	}()
	waitAccepted := func(n int) {
		t.Helper()
		require.Eventually(t, func() bool { return accepted.Load() >= int64(n) }, 3*time.Minute, 50*time.Millisecond,
			"only %d of %d events accepted", accepted.Load(), n)
	}

	// The roll: SIGTERM A at a fifth of the load, start it again, wait
	// until healthy (startProcess waits for /healthz), the same for B; then
	// at three fifths kill -9 A and start it again.
	// After a SIGTERM: what the stopping instance received but had not
	// started is handed back at once and taken by the other within one
	// receive wait; 10 s of margin for a loaded machine. After a kill -9:
	// a message the dead instance held comes back after its visibility
	// timeout and is received within one receive wait; a job it had
	// claimed is recovered after its lease and timeout; and on FerretDB
	// a write the dead instance was making leaves a write guard that
	// refuses the job's writes for 30 s (storage/mongostore/guard.go;
	// MongoDB needs none), its message received again with a back-off of
	// up to the lease, and in an ordered group the job after it waits
	// with a back-off of up to 10 s while it does not move. The bound is
	// the longest of these plus the margin.
	termBound := rollingReceive + 10*time.Second
	killBound := max(rollingVisibility+rollingReceive, rollingLease+rollingTimeout+time.Second,
		ferretGuardStale+rollingLease+orderedBackoffMax) + 10*time.Second
	var faults []*rollingFault
	restart := func(in *rollingInstance, name string, kill bool, bound time.Duration) {
		p := in.cur.Load()
		in.cur.Store(nil)
		f := &rollingFault{name: name, at: time.Now(), bound: bound}
		faults = append(faults, f)
		if kill {
			p.kill()
		} else {
			p.stop()
			require.False(t, p.alive())
			t.Logf("%s: stopped %s after SIGTERM", name, time.Since(f.at).Round(10*time.Millisecond))
		}
		start(in)
		t.Logf("%s: %s healthy again %s after the signal", name, in.name, time.Since(f.at).Round(10*time.Millisecond))
	}
	waitAccepted(events / 5)
	restart(instances[0], "SIGTERM A", false, termBound)
	restart(instances[1], "SIGTERM B", false, termBound)
	waitAccepted(events * 3 / 5)
	restart(instances[0], "kill -9 A", true, killBound)
	<-loadDone
	loadEnd := time.Now()
	require.EqualValues(t, events, accepted.Load(), "every event accepted")

	// Wait for every accepted event.
	firstAt := func(id string) (time.Time, int) {
		r := recvs[rollingModes[groupOf(id)%3]]
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.firstAt[id], r.seen[id]
	}
	ids := slices.Sorted(maps.Keys(acceptedAt))
	var lost, duplicates int
	poll := time.NewTicker(200 * time.Millisecond)
	defer poll.Stop()
	for deadline := loadEnd.Add(2 * time.Minute); ; <-poll.C {
		lost, duplicates = 0, 0
		for _, id := range ids {
			if _, n := firstAt(id); n == 0 {
				lost++
			} else {
				duplicates += n - 1
			}
		}
		if lost == 0 || time.Now().After(deadline) {
			break
		}
	}
	drained := time.Since(loadEnd)

	// Wait beyond due: an event is due when it was accepted and, in an
	// ordered mode, the event before it in its group was first delivered;
	// its wait is its first delivery after that. A wait counts for the
	// last fault before the delivery.
	var worst time.Duration
	var worstID string
	lostByMode := map[string]int{}
	worstByMode := map[string]time.Duration{}
	for _, id := range ids {
		at, n := firstAt(id)
		if n == 0 {
			lostByMode[rollingModes[groupOf(id)%3]]++
			continue
		}
		due := acceptedAt[id]
		g, seq := groupOf(id), seqOf(id)
		if rollingModes[g%3] != "IMMEDIATE" && seq > 1 {
			if prev, _ := firstAt(fmt.Sprintf("g%d-%d", g, seq-1)); prev.After(due) {
				due = prev
			}
		}
		wait := max(0, at.Sub(due))
		worstByMode[rollingModes[g%3]] = max(worstByMode[rollingModes[g%3]], wait)
		if wait > worst {
			worst, worstID = wait, id
		}
		var last *rollingFault
		for _, f := range faults {
			if f.at.Before(at) {
				last = f
			}
		}
		if last != nil && wait > last.worst {
			last.worst, last.worstID = wait, id
		}
	}
	var violations []string
	overlapped := 0
	for _, mode := range rollingModes[1:] {
		violations = append(violations, recvs[mode].orderViolations(mode)...)
		overlapped += recvs[mode].overlapped
	}
	var report []string
	for _, f := range faults {
		report = append(report, fmt.Sprintf("%s worst wait beyond due %s (%s, bound %s)", f.name, f.worst.Round(100*time.Millisecond), f.worstID, f.bound))
	}
	t.Logf("rolling restart: events=%d rate=%d/s groups=%d accepted=%d lost=%d duplicates=%d order violations=%d overlapped=%d "+
		"all delivered %s after the load; worst wait beyond due %s (%s); %s",
		events, ratePerSec, groups, len(ids), lost, duplicates, len(violations), overlapped,
		drained.Round(100*time.Millisecond), worst.Round(100*time.Millisecond), worstID, strings.Join(report, "; "))
	guards := 0
	for _, in := range instances {
		guards += strings.Count(in.cur.Load().logText(), "stale write guard taken over")
	}
	t.Logf("write guards of the killed instance taken over after %s: %d", ferretGuardStale, guards)
	for _, mode := range rollingModes {
		t.Logf("%s: lost=%d worst wait beyond due %s; first deliveries per 5 s from 20 s before the first fault: %v", mode,
			lostByMode[mode], worstByMode[mode].Round(100*time.Millisecond), recvs[mode].timeline(faults[0].at, 5*time.Second))
	}
	if dir := os.Getenv("HOOKLANE_TEST_LOG_DIR"); dir != "" {
		_ = os.WriteFile(dir+"/rolling-a.log", []byte(instances[0].cur.Load().logText()), 0o600)
		_ = os.WriteFile(dir+"/rolling-b.log", []byte(instances[1].cur.Load().logText()), 0o600)
	}

	require.Zero(t, lost, "accepted events never delivered")
	require.Empty(t, violations, "order kept in every ordered group")
	require.Zero(t, overlapped, "never two deliveries of an ordered group in flight")
	for _, f := range faults {
		require.LessOrEqual(t, f.worst, f.bound, "%s: event %s waited beyond its due time", f.name, f.worstID)
	}
}

// groupOf returns g of an event id "g<g>-<seq>".
func groupOf(id string) int {
	g, _, _ := strings.Cut(strings.TrimPrefix(id, "g"), "-")
	n, _ := strconv.Atoi(g)
	return n
}

// seqOf returns seq of an event id "g<g>-<seq>".
func seqOf(id string) int {
	_, s, _ := strings.Cut(id, "-")
	n, _ := strconv.Atoi(s)
	return n
}
