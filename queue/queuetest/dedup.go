package queuetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/queue"
)

// testDedupSuppressesResend requires a DedupID seen within the window to be
// accepted but not enqueued (in the same batch, a later batch, and after the
// original was deleted), while a new DedupID with the same body is enqueued.
func testDedupSuppressesResend(t *testing.T, s *suite) {
	q := s.newQueue(t)
	sentAt := time.Now()
	orig := queue.OutMessage{Group: "a", DedupID: "d1", Body: []byte("x")}
	dup := queue.OutMessage{Group: "a", DedupID: "d1", Body: []byte("x-dup")}
	fresh := queue.OutMessage{Group: "a", DedupID: "d2", Body: []byte("x")}
	send(t, q, orig, dup)
	send(t, q, dup)
	send(t, q, fresh)

	first := s.receiveSome(t, q, 1, longVisibility)
	require.Equal(t, "x", string(first[0].Body))
	require.NoError(t, q.Delete(t.Context(), first[0].ReceiptHandle))
	// Deleting the original does not end its dedup window. Skipped if the
	// window may have passed, for adapters configured with a short one.
	if s.f.DedupWindow <= 0 || time.Since(sentAt) < s.f.DedupWindow/2 {
		send(t, q, dup)
	}

	second := s.receiveSome(t, q, 1, longVisibility)
	require.Equal(t, "x", string(second[0].Body))
	require.NotEqual(t, first[0].ID, second[0].ID)
	require.NoError(t, q.Delete(t.Context(), second[0].ReceiptHandle))
	s.expectNone(t, q, s.f.pollWait())
}

// testDedupExpires requires a DedupID to be accepted again once the window
// has passed. A window longer than DedupExpiryCheckMax (SQS: 5 min) cannot
// be waited out in a test; for it the suite checks the other side of the
// promise instead: the window does not end early.
func testDedupExpires(t *testing.T, s *suite) {
	require.Positive(t, s.f.DedupWindow, "Features.DedupWindow must say the adapter's window")
	if s.f.DedupWindow > DedupExpiryCheckMax {
		testDedupHoldsForWindow(t, s)
		return
	}
	q := s.newQueue(t)
	sentAt := time.Now()
	send(t, q, queue.OutMessage{Group: "a", DedupID: "d1", Body: []byte("first")})
	got := s.receiveSome(t, q, 1, longVisibility)
	require.Equal(t, "first", string(got[0].Body))
	require.NoError(t, q.Delete(t.Context(), got[0].ReceiptHandle))

	// Within the window a resend is suppressed.
	if time.Since(sentAt) < s.f.DedupWindow/2 {
		send(t, q, queue.OutMessage{Group: "a", DedupID: "d1", Body: []byte("early")})
	}

	// Real time has to pass here; nothing can signal it. Wait out the
	// window (plus margin) with a long poll, which must stay empty.
	s.expectNone(t, q, min(time.Until(sentAt.Add(s.f.DedupWindow+s.f.shortVisibility())), s.f.maxWait()))
	send(t, q, queue.OutMessage{Group: "a", DedupID: "d1", Body: []byte("second")})
	got = s.receiveSome(t, q, 1, longVisibility)
	require.Equal(t, "second", string(got[0].Body))
}

// testDedupHoldsForWindow requires a DedupID still to suppress a resend
// DedupExpiryCheckMax after the first send, when the window is longer.
func testDedupHoldsForWindow(t *testing.T, s *suite) {
	q := s.newQueue(t)
	sentAt := time.Now()
	send(t, q, queue.OutMessage{Group: "a", DedupID: "d1", Body: []byte("first")})
	got := s.receiveSome(t, q, 1, longVisibility)
	require.Equal(t, "first", string(got[0].Body))
	require.NoError(t, q.Delete(t.Context(), got[0].ReceiptHandle))
	// Real time has to pass here; nothing can signal it.
	s.expectNone(t, q, min(time.Until(sentAt.Add(DedupExpiryCheckMax)), s.f.maxWait()))
	send(t, q, queue.OutMessage{Group: "a", DedupID: "d1", Body: []byte("late")})
	s.expectNone(t, q, s.f.pollWait())
}
