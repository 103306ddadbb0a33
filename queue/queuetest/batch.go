package queuetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/queue"
)

// testSendBatchOfTen requires a full batch to be accepted entry by entry and
// received in order.
func testSendBatchOfTen(t *testing.T, s *suite) {
	q := s.newQueue(t)
	out := make([]queue.OutMessage, queue.MaxBatch)
	for i := range out {
		out[i] = msg("a", i)
	}
	res, err := q.SendBatch(t.Context(), out)
	require.NoError(t, err)
	require.Len(t, res, queue.MaxBatch)
	for i, r := range res {
		require.NoError(t, r.Err, "entry %d", i)
	}
	for i := range queue.MaxBatch {
		got := s.receiveSome(t, q, queue.MaxBatch, longVisibility)
		require.Equal(t, fmt.Sprintf("a-%d", i), string(got[0].Body))
		// With GroupBatch several arrive at once; take them in order.
		deleteAll(t, q, got[:1])
		if len(got) > 1 {
			for _, m := range got[1:] {
				require.NoError(t, q.ChangeVisibility(t.Context(), m.ReceiptHandle, 0))
			}
		}
	}
	s.expectNone(t, q, 0)
}

// testSendBatchOverMax requires a batch larger than queue.MaxBatch to be
// rejected whole.
func testSendBatchOverMax(t *testing.T, s *suite) {
	q := s.newQueue(t)
	out := make([]queue.OutMessage, queue.MaxBatch+1)
	for i := range out {
		out[i] = msg(fmt.Sprintf("g%d", i), 0)
	}
	_, err := q.SendBatch(t.Context(), out)
	require.Error(t, err)
	s.expectNone(t, q, s.f.pollWait())
}

// testSendCancelled requires SendBatch with a cancelled ctx to fail with the
// context's error.
func testSendCancelled(t *testing.T, s *suite) {
	q := s.newQueue(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := q.SendBatch(ctx, []queue.OutMessage{msg("a", 0)})
	require.ErrorIs(t, err, context.Canceled)
}
