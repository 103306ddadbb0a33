package dispatch_test

import (
	"errors"
	"log/slog"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/clocktest"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/queue/memqueue"
	"github.com/hooklane/hooklane/stream"
)

// With CircuitPolicy.DurableEvents, every path that discards a job whose
// max age passed stores its dispatch.discarded event in the operational
// outbox with the job's write (issue 32): the claim, the stale-queued
// rescue and the circuit's hold. A job of an operational event type is
// discarded without one (no news of the news). Without DurableEvents the
// outbox holds no discard. Runs on both stores, with an injected clock.
func TestDiscardsFillTheOutbox(t *testing.T) {
	t.Parallel()
	for _, kind := range storeKinds() {
		for _, durable := range []bool{true, false} {
			name := kind.name + "/durable"
			if !durable {
				name = kind.name + "/off"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				ctx := t.Context()
				st := kind.open(t)
				circuits, ok := st.(dispatch.CircuitStore)
				require.True(t, ok)
				outbox, ok := st.(dispatch.OutboxStore)
				require.True(t, ok, "%s store keeps the operational outbox", kind.name)
				q := memqueue.New(memqueue.Config{})
				t.Cleanup(func() { _ = q.Close() })
				start := time.Now().UTC().Truncate(time.Millisecond)
				clock := clocktest.New(start)
				ids := idgen.New(clock.Now)
				discarded := map[string]stream.Event{} // by job id, as written
				lc := dispatch.NewLifecycle(dispatch.LifecycleConfig{
					Store: st, Queue: q, NewID: ids.New, NowFunc: clock.Now, Logger: slog.New(slog.DiscardHandler),
					Circuit: dispatch.CircuitPolicy{Store: circuits, Failures: 1, Cooldown: 10 * time.Minute, DurableEvents: durable},
					OnEventsFunc: func(_ *dispatch.Job, events []stream.Event) {
						for _, e := range events {
							if e.Type == stream.TypeDispatchDiscarded {
								discarded[e.Subject] = e
							}
						}
					},
				})
				job := func(code string) *dispatch.Job {
					j := circuitTestJob(ids.New(), start)
					j.Code = code
					j.MaxAgeSeconds = 60
					return j
				}
				claimed, rescued, held, failing := job("order.created"), job("order.created"), job("order.created"), job("order.created")
				news := job("hooklane.subscription.disabled")
				all := []*dispatch.Job{claimed, rescued, held, failing, news}
				require.NoError(t, lc.Insert(ctx, all))

				// One failed attempt opens the circuit (for ten minutes).
				require.NoError(t, lc.Claim(ctx, failing, dispatch.ClaimParams{Worker: "w", Lease: time.Minute}))
				_, err := lc.RecordOutcome(ctx, failing, dispatch.Outcome{Attempted: true, Err: errors.New("HTTP 503"), Attempt: dispatch.Attempt{StatusCode: 503}})
				require.NoError(t, err)
				c, err := circuits.CircuitGet(ctx, "sub-1")
				require.NoError(t, err)
				require.Equal(t, dispatch.CircuitOpen, c.State)

				// Two minutes later every QUEUED job is past its max age.
				clock.Advance(2 * time.Minute)
				require.ErrorIs(t, lc.Claim(ctx, claimed, dispatch.ClaimParams{Worker: "w", Lease: time.Minute}), dispatch.ErrExpired)
				require.ErrorIs(t, lc.Claim(ctx, news, dispatch.ClaimParams{Worker: "w", Lease: time.Minute}), dispatch.ErrExpired)
				stillHeld, err := lc.HoldForCircuit(ctx, held, time.Minute)
				require.NoError(t, err)
				require.True(t, stillHeld)
				moved, _, err := lc.RescueStale(ctx, dispatch.RescueParams{Before: clock.Now(), Limit: 10})
				require.NoError(t, err)
				require.Equal(t, 1, moved, "the rescuer finds the one job left QUEUED")
				for _, j := range []*dispatch.Job{claimed, rescued, held, news} {
					got, err := lc.Get(ctx, j.ID)
					require.NoError(t, err)
					require.Equal(t, dispatch.StatusError, got.Status, "job %s", j.ID)
				}
				require.Len(t, discarded, 4, "each discard emitted dispatch.discarded")

				got, err := outbox.OutboxList(ctx, 100)
				require.NoError(t, err)
				var discards []stream.Event
				for _, e := range got {
					if e.Type == stream.TypeDispatchDiscarded {
						discards = append(discards, e)
					}
				}
				if !durable {
					require.Empty(t, got)
					return
				}
				want := []stream.Event{discarded[claimed.ID], discarded[held.ID], discarded[rescued.ID]}
				sort.Slice(want, func(a, b int) bool { return want[a].ID < want[b].ID })
				require.Len(t, discards, 3, "the claim's, the hold's and the rescue's discard; none for the operational job")
				for i := range want {
					require.Equal(t, want[i].ID, discards[i].ID, "the outbox event is the status event")
					require.Equal(t, want[i].Subject, discards[i].Subject)
					require.Equal(t, "max age passed before delivery", discards[i].Data.Error)
					require.Equal(t, "order.created", discards[i].Data.EventType)
					require.Equal(t, "orders", discards[i].Data.Subscription)
				}
			})
		}
	}
}
