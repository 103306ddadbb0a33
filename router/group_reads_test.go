package router_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
)

// TestOrderedDeliveryReadsItsGroupOnce: the router delivers a job of an
// ordered group with one read of the group before the claim — the head
// the lost-head check reads is the one the order gate applies — in both
// ordered modes (it was two: issue 30).
func TestOrderedDeliveryReadsItsGroupOnce(t *testing.T) {
	t.Parallel()
	for _, mode := range []dispatch.Mode{dispatch.ModeNextOnError, dispatch.ModeBlockOnError} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			var rc bodyRecorder
			srv := rc.server(t)
			reads := &readCounter{}
			g := newGW(t, gwOptions{reads: reads, noRouter: true})
			ctx := context.Background()

			j, ev := snapshotFixture(t, g, "orders", srv.URL)
			j.Mode, j.MessageGroup = mode, "orders:g1"
			require.NoError(t, g.st.JobUpdate(ctx, &dispatch.JobUpdateParams{Job: j}))
			_, err := g.jobs.Send(ctx, []*dispatch.Job{j}, ev)
			require.NoError(t, err)
			before := reads.groups.Load()

			runCtx, cancel := context.WithCancel(ctx)
			var wg sync.WaitGroup
			wg.Go(func() { _ = g.rt.Run(runCtx) })
			stop := sync.OnceFunc(func() { cancel(); wg.Wait() })
			t.Cleanup(stop)
			done := g.waitStatus(j.ID, dispatch.StatusCompleted, 60*time.Second)
			require.Equal(t, 1, done.AttemptCount)
			// The job reads COMPLETED as soon as its outcome is written;
			// stopping the router lets the delivery's bookkeeping (the
			// release after the outcome) finish before the count.
			stop()
			// BLOCK_ON_ERROR releases the group after the outcome: one
			// more read, after the delivery.
			want := int64(1)
			if mode == dispatch.ModeBlockOnError {
				want = 2
			}
			require.Equal(t, want, reads.groups.Load()-before, "reads of the group for one delivery")
		})
	}
}
