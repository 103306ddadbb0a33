package router_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription"
)

// TestCircuitOpensHoldsProbesOnceClosesAndDrains walks a circuit through
// API.md §12 with two instances (two lifecycles, two routers) on one store
// and one queue, on a BLOCK_ON_ERROR subscription with three message groups:
// three failed heads open it; while OPEN no request reaches the receiver
// (counted there) and waiting consumes no attempt; a failed probe reopens
// it with the cooldown doubled; of the jobs due at the next probe exactly
// one — a group's head — is sent while the others wait; its success closes
// the circuit and everything drains, each group in order.
func TestCircuitOpensHoldsProbesOnceClosesAndDrains(t *testing.T) {
	t.Parallel()
	for _, k := range circuitStores() {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			st := k.open(t)
			r := newRig(t, st, rigOptions{instances: 2, mode: dispatch.ModeBlockOnError, failures: 3, cooldown: 30 * time.Second})
			groups := []string{"g1", "g2", "g3"}
			var jobs []*dispatch.Job
			for _, g := range groups {
				jobs = append(jobs, r.post(g, 1, 2, 3)...)
			}

			// Opens: the three heads fail (503) once each.
			c := r.waitCircuit("opened", func(c *dispatch.Circuit) bool { return c.State == dispatch.CircuitOpen })
			require.Equal(t, 3, c.ConsecutiveFailures)
			require.Equal(t, 30*time.Second, c.Cooldown)
			require.Equal(t, c.OpenedAt.Add(30*time.Second), *c.NextProbeAt)
			require.Equal(t, int64(3), r.rx.hits.Load(), "three failed attempts before it opened")

			// Holds: the heads' retries come due (backoff 1 s) and more events
			// arrive; every job waits, nothing is sent.
			jobs = append(jobs, r.post("g4", 1, 2)...)
			r.clock.Advance(2 * time.Second)
			heads := []*dispatch.Job{jobs[0], jobs[3], jobs[6], jobs[9]}
			r.waitJobs("parked by the circuit", heads, parkedByCircuit)
			for _, j := range r.jobs(heads) {
				require.Equal(t, *c.NextProbeAt, *j.NextAttemptAt, "a job waits until the circuit's next probe")
			}
			for _, j := range r.jobs(jobs) {
				require.LessOrEqual(t, j.AttemptCount, 1, "waiting consumes no attempt")
			}
			require.Equal(t, int64(3), r.rx.hits.Load(), "no request reached the receiver while OPEN")

			// A failed probe: exactly one request, the circuit reopens with
			// the cooldown doubled, and one waiting job is due at the new
			// NextProbeAt.
			r.clock.Advance(30 * time.Second)
			c = r.waitCircuit("reopened", func(c *dispatch.Circuit) bool {
				return c.State == dispatch.CircuitOpen && c.Cooldown == time.Minute
			})
			require.Equal(t, int64(4), r.rx.hits.Load(), "one probe")
			require.Equal(t, 4, c.ConsecutiveFailures)
			r.waitKind(dispatch.CircuitEventProbeFailed, 1)
			r.waitJobs("waiting for the circuit (or retrying the probe)", heads, func(j *dispatch.Job) bool { return j.Status == dispatch.StatusPending })
			due := 0
			for _, j := range r.jobs(heads) {
				if !j.NextAttemptAt.After(*c.NextProbeAt) {
					due++
				}
			}
			require.Positive(t, due, "a job is due for the next probe")

			// Probes once: at the next probe time every waiting job comes due
			// at once; the receiver holds the one request it gets.
			release := r.rx.hold()
			defer release()
			r.rx.status.Store(http.StatusOK)
			r.clock.Advance(time.Minute)
			var probe string
			select {
			case probe = <-r.rx.arrived:
			case <-time.After(time.Minute):
				c = r.circuit()
				t.Fatalf("no probe arrived within a minute of the next probe time (circuit %s, next probe %v, clock %v)",
					c.State, c.NextProbeAt, r.clock.Now())
			}
			require.True(t, slices.ContainsFunc(heads, func(j *dispatch.Job) bool { return j.ID == probe }), "the probe is a group's head")
			others := slices.DeleteFunc(slices.Clone(heads), func(j *dispatch.Job) bool { return j.ID == probe })
			// The others were already parked by the circuit, due at this
			// very probe time: wait until each is parked again, past now.
			r.waitJobs("parked while the probe runs", others, func(j *dispatch.Job) bool {
				return parkedByCircuit(j) && j.NextAttemptAt != nil && j.NextAttemptAt.After(r.clock.Now())
			})
			c = r.circuit()
			require.Equal(t, dispatch.CircuitHalfOpen, c.State)
			require.Equal(t, probe, c.ProbeJobID)
			for _, j := range r.jobs(others) {
				require.True(t, j.NextAttemptAt.After(r.clock.Now()), "the others wait, at the latest until a probe's end")
				require.False(t, j.NextAttemptAt.After(*c.ProbeUntil))
			}
			require.Equal(t, int64(5), r.rx.hits.Load(), "exactly one probe while HALF_OPEN, with two routers racing")
			require.Equal(t, int64(2), r.kind(dispatch.CircuitEventProbeStarted))

			// Closes and drains, each group in order.
			release()
			r.waitJobs("completed", jobs, func(j *dispatch.Job) bool { return j.Status == dispatch.StatusCompleted })
			c = r.circuit()
			require.Equal(t, dispatch.CircuitClosed, c.State)
			require.Zero(t, c.ConsecutiveFailures)
			require.Nil(t, c.FailingSince)
			require.Equal(t, int64(5+len(jobs)-1), r.rx.hits.Load(), "after the probe, one request per job")
			seqs := map[string][]int{}
			for _, d := range r.rx.deliveries() {
				seqs[d.group] = append(seqs[d.group], d.seq)
			}
			for _, g := range groups {
				require.Equal(t, []int{1, 2, 3}, seqs[g], "group %s in order", g)
			}
			require.Equal(t, []int{1, 2}, seqs["g4"])

			var types []string
			for _, e := range r.subscriptionEvents() {
				types = append(types, e.Type)
				require.Equal(t, "orders", e.Data.Subscription)
			}
			require.Equal(t, []string{stream.TypeSubscriptionCircuitOpened, stream.TypeSubscriptionCircuitOpened, stream.TypeSubscriptionCircuitClosed}, types)
		})
	}
}

// TestCircuitProbeSlotRace: when the probe is due, of many routers' jobs
// racing through the gate exactly one takes the slot (a version-checked
// write of the circuit); the rest are parked.
func TestCircuitProbeSlotRace(t *testing.T) {
	t.Parallel()
	for _, k := range circuitStores() {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			st := k.open(t)
			r := newRig(t, st, rigOptions{instances: 4, failures: 1, cooldown: time.Minute})
			first := r.post("a", 1)
			r.waitCircuit("opened", func(c *dispatch.Circuit) bool { return c.State == dispatch.CircuitOpen })
			r.waitJobs("retrying", first, func(j *dispatch.Job) bool { return j.Status == dispatch.StatusPending })
			_, err := r.lcs[0].Cancel(context.Background(), first[0].ID, "out of the race")
			require.NoError(t, err)
			r.clock.Advance(2 * time.Minute) // past NextProbeAt: the probe is due

			// Eight jobs, read QUEUED, go through the gates of the four
			// lifecycles at once, as routers that received them would.
			ctx := context.Background()
			var racers []*dispatch.Job
			for i := range 8 {
				j := dispatch.NewEventJob(r.eventFor(t, i), r.sub.JobSettings(), r.clock.Now())
				racers = append(racers, j)
			}
			r.insertOnly(t, racers)
			type result struct {
				id   string
				held bool
				err  error
			}
			start := make(chan struct{})
			results := make(chan result, len(racers))
			for i, j := range racers {
				lc := r.lcs[i%len(r.lcs)]
				go func() {
					<-start
					held, err := lc.HoldForCircuit(ctx, j, time.Minute)
					results <- result{id: j.ID, held: held, err: err}
				}()
			}
			close(start)
			var winners []string
			for range racers {
				res := <-results
				require.NoError(t, res.err)
				if !res.held {
					winners = append(winners, res.id)
				}
			}
			require.Len(t, winners, 1, "exactly one job takes the probe slot")
			c := r.circuit()
			require.Equal(t, dispatch.CircuitHalfOpen, c.State)
			require.Equal(t, winners[0], c.ProbeJobID)
			for _, j := range r.jobs(racers) {
				if j.ID != winners[0] {
					require.True(t, parkedByCircuit(j), "the losers wait: %s %s", j.ID, j.Status)
				}
			}
		})
	}
}

// TestCircuitIgnoresPermanentFailures: a 4xx that ends a job in ERROR
// neither counts toward consecutiveFailures nor resets it, and does not open
// the circuit; it starts the auto-disable clock.
func TestCircuitIgnoresPermanentFailures(t *testing.T) {
	t.Parallel()
	for _, k := range circuitStores() {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			st := k.open(t)
			r := newRig(t, st, rigOptions{failures: 3, cooldown: time.Minute})
			r.rx.status.Store(http.StatusServiceUnavailable)
			failing := r.post("a", 1, 2)
			r.waitCircuit("counting two failures", func(c *dispatch.Circuit) bool { return c.ConsecutiveFailures == 2 })
			// Stop the two failing jobs from retrying meanwhile.
			for _, j := range failing {
				_, err := r.lcs[0].Cancel(context.Background(), j.ID, "test")
				require.NoError(t, err)
			}
			r.rx.status.Store(http.StatusBadRequest)
			bad := r.post("b", 1, 2, 3, 4, 5)
			r.waitJobs("ERROR", bad, func(j *dispatch.Job) bool { return j.Status == dispatch.StatusError })
			c := r.circuit()
			require.Equal(t, dispatch.CircuitClosed, c.State, "five 4xx do not open it")
			require.Equal(t, 2, c.ConsecutiveFailures, "nor reset the count")
			require.NotNil(t, c.FailingSince, "the auto-disable clock runs")

			r.rx.status.Store(http.StatusServiceUnavailable)
			r.post("c", 1)
			c = r.waitCircuit("opened by the third retryable failure", func(c *dispatch.Circuit) bool { return c.State == dispatch.CircuitOpen })
			require.Equal(t, 3, c.ConsecutiveFailures)
		})
	}
}

// TestCircuitAutoDisable: a subscription whose every attempt failed for
// AutoDisableAfter is paused with a statusReason and subscription.disabled;
// its jobs wait; resuming (ResetCircuit, as POST …/resume does) closes the
// circuit, and the jobs go out.
func TestCircuitAutoDisable(t *testing.T) {
	t.Parallel()
	for _, k := range circuitStores() {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			st := k.open(t)
			r := newRig(t, st, rigOptions{failures: 100, autoDisableAfter: 10 * time.Second})
			jobs := r.post("a", 1)
			r.waitCircuit("counting", func(c *dispatch.Circuit) bool { return c.ConsecutiveFailures == 1 })
			ctx := context.Background()
			sub, err := st.SubscriptionGetByID(ctx, r.sub.ID)
			require.NoError(t, err)
			require.Equal(t, subscription.StatusActive, sub.Status, "not yet")

			// The retry after 11 s fails too: the clock has run out.
			r.clock.Advance(11 * time.Second)
			require.Eventually(t, func() bool {
				sub, err = st.SubscriptionGetByID(ctx, r.sub.ID)
				require.NoError(t, err)
				return sub.Status == subscription.StatusPaused
			}, 60*time.Second, 10*time.Millisecond, "never disabled")
			require.NotNil(t, sub.StatusReason)
			require.Contains(t, *sub.StatusReason, "every delivery attempt failed since")
			r.waitKind(dispatch.CircuitEventDisabled, 1)
			events := r.subscriptionEvents()
			require.Equal(t, stream.TypeSubscriptionDisabled, events[len(events)-1].Type)
			require.Equal(t, *sub.StatusReason, events[len(events)-1].Data.Reason)

			// The job waits paused; nothing more is sent.
			r.waitCachesSee(subscription.StatusPaused)
			r.clock.Advance(2 * time.Second)
			r.waitJobs("parked as paused", jobs, func(j *dispatch.Job) bool {
				return j.Status == dispatch.StatusPending && j.BlockedBy == dispatch.BlockedByPaused
			})
			hits := r.rx.hits.Load()

			// Resume: the operator's write, then the circuit reset and the
			// release, as the API does.
			r.rx.status.Store(http.StatusOK)
			sub.Status, sub.StatusReason = subscription.StatusActive, nil
			require.NoError(t, st.SubscriptionUpdate(ctx, sub))
			require.NoError(t, r.lcs[0].ResetCircuit(ctx, sub.ID, sub.Code))
			_, err = r.lcs[0].ReleaseSubscription(ctx, sub.ID)
			require.NoError(t, err)
			r.waitJobs("completed", jobs, func(j *dispatch.Job) bool { return j.Status == dispatch.StatusCompleted })
			require.Equal(t, hits+1, r.rx.hits.Load())
			c := r.circuit()
			require.True(t, c.State == dispatch.CircuitClosed && c.ConsecutiveFailures == 0 && c.FailingSince == nil)
		})
	}
}

// TestCircuitMaxAgeExpiresWaitingJobs: a job waiting behind an open circuit
// is parked no later than its max age, and then goes to ERROR with nothing
// sent.
func TestCircuitMaxAgeExpiresWaitingJobs(t *testing.T) {
	t.Parallel()
	for _, k := range circuitStores() {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			st := k.open(t)
			r := newRig(t, st, rigOptions{failures: 1, cooldown: 10 * time.Minute, maxAgeSeconds: 20})
			opener := r.post("a", 1)
			r.waitCircuit("opened", func(c *dispatch.Circuit) bool { return c.State == dispatch.CircuitOpen })
			waiting := r.post("b", 1)
			r.waitJobs("parked", waiting, parkedByCircuit)
			j := r.jobs(waiting)[0]
			require.Equal(t, j.AgeDeadline().Add(time.Millisecond), *j.NextAttemptAt, "parked until its max age, not the far probe")
			hits := r.rx.hits.Load()

			r.clock.Advance(21 * time.Second)
			r.waitJobs("discarded", append(waiting, opener...), func(j *dispatch.Job) bool { return j.Status == dispatch.StatusError })
			got := r.jobs(waiting)[0]
			require.Zero(t, got.AttemptCount, "nothing was attempted")
			require.Contains(t, *got.LastError, "max age")
			require.Equal(t, hits, r.rx.hits.Load(), "nothing sent")
		})
	}
}
