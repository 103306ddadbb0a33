package dispatch_test

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/queue/memqueue"
	"github.com/hooklane/hooklane/stream"
)

// With CircuitPolicy.DurableEvents, the opening and the closing of a
// circuit store their status events in the operational outbox with the
// circuit write (the same ids as on the stream, the relay's dedup key);
// without it the outbox stays empty. Runs on both stores.
func TestCircuitTransitionsFillTheOutbox(t *testing.T) {
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
				ids := idgen.New(time.Now)
				var written []stream.Event
				lc := dispatch.NewLifecycle(dispatch.LifecycleConfig{
					Store: st, Queue: q, NewID: ids.New, Logger: slog.New(slog.DiscardHandler),
					Circuit: dispatch.CircuitPolicy{Store: circuits, Failures: 2, Cooldown: time.Minute, DurableEvents: durable},
					OnEventsFunc: func(_ *dispatch.Job, events []stream.Event) {
						for _, e := range events {
							if e.Type == stream.TypeSubscriptionCircuitOpened || e.Type == stream.TypeSubscriptionCircuitClosed {
								written = append(written, e)
							}
						}
					},
				})
				jobs := []*dispatch.Job{circuitTestJob(ids.New(), time.Now()), circuitTestJob(ids.New(), time.Now())}
				require.NoError(t, lc.Insert(ctx, jobs))
				for _, j := range jobs {
					held, err := lc.HoldForCircuit(ctx, j, time.Minute)
					require.NoError(t, err)
					require.False(t, held)
					require.NoError(t, lc.Claim(ctx, j, dispatch.ClaimParams{Worker: "w", Lease: time.Minute}))
					_, err = lc.RecordOutcome(ctx, j, dispatch.Outcome{
						Attempted: true, Err: errors.New("HTTP 503"), Attempt: dispatch.Attempt{StatusCode: 503},
					})
					require.NoError(t, err)
				}
				c, err := circuits.CircuitGet(ctx, "sub-1")
				require.NoError(t, err)
				require.Equal(t, dispatch.CircuitOpen, c.State)
				require.NoError(t, lc.ResetCircuit(ctx, "sub-1", "orders"))

				require.Len(t, written, 2, "opened, then closed")
				got, err := outbox.OutboxList(ctx, 10)
				require.NoError(t, err)
				if !durable {
					require.Empty(t, got)
					return
				}
				require.Len(t, got, 2)
				for i := range got {
					require.Equal(t, written[i].ID, got[i].ID, "the outbox event is the status event")
					require.Equal(t, written[i].Type, got[i].Type)
					require.Equal(t, "sub-1", got[i].Subject)
					require.Equal(t, written[i].Data.Reason, got[i].Data.Reason)
				}
			})
		}
	}
}
