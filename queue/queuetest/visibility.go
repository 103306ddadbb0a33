package queuetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/queue"
)

// testVisibilityExpiryRedelivers requires a message not deleted within its
// visibility timeout to come back first, with a new receipt handle and a
// higher ReceiveCount, and the old handle to be rejected.
func testVisibilityExpiryRedelivers(t *testing.T, s *suite) {
	q := s.newQueue(t)
	send(t, q, msg("a", 0), msg("a", 1))

	first := s.receiveSome(t, q, 1, s.f.shortVisibility())
	require.Equal(t, "a-0", string(first[0].Body))
	require.Equal(t, 1, first[0].ReceiveCount)

	again := s.receiveSome(t, q, 1, longVisibility)
	require.Equal(t, "a-0", string(again[0].Body), "the expired message must come back before later ones")
	require.Equal(t, first[0].ID, again[0].ID)
	require.Equal(t, "a", again[0].Group)
	require.Equal(t, 2, again[0].ReceiveCount)
	require.NotEqual(t, first[0].ReceiptHandle, again[0].ReceiptHandle)

	if !s.f.LaxReceipts {
		require.ErrorIs(t, q.Delete(t.Context(), first[0].ReceiptHandle), queue.ErrInvalidReceipt)
		require.ErrorIs(t, q.ChangeVisibility(t.Context(), first[0].ReceiptHandle, 0), queue.ErrInvalidReceipt)
		// The stale calls must not have touched the current delivery.
		s.expectNone(t, q, 0)
	}

	require.NoError(t, q.Delete(t.Context(), again[0].ReceiptHandle))
	next := s.receiveSome(t, q, 1, longVisibility)
	require.Equal(t, "a-1", string(next[0].Body))
	require.Equal(t, 1, next[0].ReceiveCount)
}

// testDefaultVisibilityHides requires Visibility 0 to use the queue's
// default, which outlasts a short wait.
func testDefaultVisibilityHides(t *testing.T, s *suite) {
	q := s.newQueue(t)
	send(t, q, msg("a", 0))
	got := s.receiveSome(t, q, 1, 0)
	require.Equal(t, "a-0", string(got[0].Body))
	s.expectNone(t, q, s.f.pollWait())
	require.NoError(t, q.Delete(t.Context(), got[0].ReceiptHandle))
}

// testChangeVisibilityZero requires ChangeVisibility(0) to make the message
// receivable at once.
func testChangeVisibilityZero(t *testing.T, s *suite) {
	q := s.newQueue(t)
	send(t, q, msg("a", 0), msg("a", 1))
	first := s.receiveSome(t, q, 1, longVisibility)
	require.NoError(t, q.ChangeVisibility(t.Context(), first[0].ReceiptHandle, 0))

	again := s.receiveSome(t, q, 1, longVisibility)
	require.Equal(t, "a-0", string(again[0].Body))
	require.Equal(t, first[0].ID, again[0].ID)
	require.Equal(t, 2, again[0].ReceiveCount)
}

// testChangeVisibilityExtends requires an extended message to stay hidden
// past its original timeout, with its handle still current.
func testChangeVisibilityExtends(t *testing.T, s *suite) {
	q := s.newQueue(t)
	send(t, q, msg("a", 0))
	first := s.receiveSome(t, q, 1, s.f.shortVisibility())
	require.NoError(t, q.ChangeVisibility(t.Context(), first[0].ReceiptHandle, longVisibility))

	// Wait well past the original timeout; a long poll returns early if
	// the message reappears.
	s.expectNone(t, q, min(3*s.f.shortVisibility(), s.f.maxWait()))
	require.NoError(t, q.Delete(t.Context(), first[0].ReceiptHandle))
	s.expectNone(t, q, 0)
}

// testDeleteRemoves requires a deleted message to be gone and its handle to
// be spent.
func testDeleteRemoves(t *testing.T, s *suite) {
	q := s.newQueue(t)
	send(t, q, msg("a", 0))
	got := s.receiveSome(t, q, 1, s.f.shortVisibility())
	require.NoError(t, q.Delete(t.Context(), got[0].ReceiptHandle))
	if !s.f.LaxReceipts {
		require.ErrorIs(t, q.Delete(t.Context(), got[0].ReceiptHandle), queue.ErrInvalidReceipt)
		require.ErrorIs(t, q.ChangeVisibility(t.Context(), got[0].ReceiptHandle, 0), queue.ErrInvalidReceipt)
	}
	// Past the short visibility timeout nothing comes back.
	s.expectNone(t, q, min(3*s.f.shortVisibility(), s.f.maxWait()))
}

// testMalformedReceipt requires a handle the queue never issued to be
// rejected.
func testMalformedReceipt(t *testing.T, s *suite) {
	q := s.newQueue(t)
	send(t, q, msg("a", 0))
	if !s.f.LaxMalformedDelete {
		require.ErrorIs(t, q.Delete(t.Context(), "not-a-receipt-handle"), queue.ErrInvalidReceipt)
	}
	require.ErrorIs(t, q.ChangeVisibility(t.Context(), "not-a-receipt-handle", 0), queue.ErrInvalidReceipt)
	got := s.receiveSome(t, q, 1, longVisibility)
	require.Equal(t, "a-0", string(got[0].Body))
}
