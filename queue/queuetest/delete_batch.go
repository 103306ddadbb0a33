package queuetest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/queue"
)

// receiveN polls until n messages are received (each group's head) and
// returns them.
func (s *suite) receiveN(t *testing.T, q queue.Queue, n int) []queue.Message {
	t.Helper()
	var got []queue.Message
	for len(got) < n {
		got = append(got, s.receiveSome(t, q, min(queue.MaxBatch, n-len(got)), longVisibility)...)
	}
	require.Len(t, got, n)
	return got
}

func handles(msgs []queue.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.ReceiptHandle
	}
	return out
}

// testDeleteBatchRemoves requires a full DeleteBatch to delete every
// message, reporting success entry by entry, and the next message of each
// group to be receivable after it.
func testDeleteBatchRemoves(t *testing.T, s *suite) {
	q := s.newQueue(t)
	var out []queue.OutMessage
	for i := range queue.MaxBatch {
		g := fmt.Sprintf("g%d", i)
		out = append(out, msg(g, 0), msg(g, 1))
	}
	send(t, q, out...)
	got := s.receiveN(t, q, queue.MaxBatch)
	// A GroupBatch adapter may have handed out both messages of a group:
	// keep the heads, return the rest.
	var heads []queue.Message
	for _, m := range got {
		if string(m.Body) == m.Group+"-0" {
			heads = append(heads, m)
		} else {
			require.NoError(t, q.ChangeVisibility(t.Context(), m.ReceiptHandle, 0))
		}
	}
	for len(heads) < queue.MaxBatch {
		for _, m := range s.receiveSome(t, q, queue.MaxBatch, longVisibility) {
			require.Equal(t, m.Group+"-0", string(m.Body), "a group's second message came before its head was deleted")
			heads = append(heads, m)
		}
	}

	res, err := q.DeleteBatch(t.Context(), handles(heads))
	require.NoError(t, err)
	require.Len(t, res, queue.MaxBatch)
	for i, r := range res {
		require.NoError(t, r, "entry %d", i)
	}
	seconds := s.receiveN(t, q, queue.MaxBatch)
	for _, m := range seconds {
		require.Equal(t, m.Group+"-1", string(m.Body), "a deleted message came back")
	}
	res, err = q.DeleteBatch(t.Context(), handles(seconds))
	require.NoError(t, err)
	for i, r := range res {
		require.NoError(t, r, "entry %d", i)
	}
	s.expectNone(t, q, s.f.pollWait())
	if !s.f.LaxReceipts {
		res, err = q.DeleteBatch(t.Context(), handles(seconds))
		require.NoError(t, err)
		for i, r := range res {
			require.ErrorIs(t, r, queue.ErrInvalidReceipt, "entry %d: a spent handle", i)
		}
	}
}

// testDeleteBatchPerEntry requires one bad handle to fail only its own
// entry.
func testDeleteBatchPerEntry(t *testing.T, s *suite) {
	q := s.newQueue(t)
	send(t, q, msg("a", 0), msg("a", 1))
	got := s.receiveSome(t, q, 1, longVisibility)
	require.Equal(t, "a-0", string(got[0].Body))
	res, err := q.DeleteBatch(t.Context(), []string{"not-a-receipt-handle", got[0].ReceiptHandle})
	require.NoError(t, err)
	require.Len(t, res, 2)
	if !s.f.LaxMalformedDelete {
		require.ErrorIs(t, res[0], queue.ErrInvalidReceipt)
	}
	require.NoError(t, res[1])
	next := s.receiveSome(t, q, 1, longVisibility)
	require.Equal(t, "a-1", string(next[0].Body))
}

// testDeleteBatchBounds requires an empty DeleteBatch to do nothing and one
// larger than queue.MaxBatch to be rejected whole.
func testDeleteBatchBounds(t *testing.T, s *suite) {
	q := s.newQueue(t)
	res, err := q.DeleteBatch(t.Context(), nil)
	require.NoError(t, err)
	require.Empty(t, res)

	send(t, q, msg("a", 0))
	got := s.receiveSome(t, q, 1, longVisibility)
	over := make([]string, queue.MaxBatch+1)
	for i := range over {
		over[i] = got[0].ReceiptHandle
	}
	_, err = q.DeleteBatch(t.Context(), over)
	require.Error(t, err)
	// Nothing was deleted: the message comes back once returned.
	require.NoError(t, q.ChangeVisibility(t.Context(), got[0].ReceiptHandle, 0))
	again := s.receiveSome(t, q, 1, longVisibility)
	require.Equal(t, "a-0", string(again[0].Body))
}
