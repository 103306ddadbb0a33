package queuetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/queue"
)

// longVisibility is a visibility timeout no test outlives, for messages
// that must stay in flight until the test acts on them.
const longVisibility = 60 * time.Second

// suite carries what every conformance test needs.
type suite struct {
	f        Features
	newQueue func(t *testing.T) queue.Queue
}

// Run runs the conformance suite against the adapter. newQueue returns a
// fresh, empty queue of its own (its own namespace on a shared backend) and
// registers its cleanup with t. Every subtest runs in parallel on its own
// queue, so newQueue must be safe for concurrent use.
func Run(t *testing.T, f Features, newQueue func(t *testing.T) queue.Queue) {
	t.Helper()
	s := &suite{f: f, newQueue: newQueue}
	tests := []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"Ping", testPing},
		{"FIFOWithinGroup", testFIFOWithinGroup},
		{"OneInFlightPerGroup", testOneInFlightPerGroup},
		{"GroupsIndependent", testGroupsIndependent},
		{"SendToBusyGroup", testSendToBusyGroup},
		{"ConcurrentConsumers", testConcurrentConsumers},
		{"VisibilityExpiryRedelivers", testVisibilityExpiryRedelivers},
		{"DefaultVisibilityHides", testDefaultVisibilityHides},
		{"ChangeVisibilityZero", testChangeVisibilityZero},
		{"ChangeVisibilityExtends", testChangeVisibilityExtends},
		{"ExtendedOutlivesVisibility", testExtendedOutlivesVisibility},
		{"HandBackReceivedAtOnce", testHandBackReceivedAtOnce},
		{"DeleteRemoves", testDeleteRemoves},
		{"MalformedReceipt", testMalformedReceipt},
		{"DeleteBatchRemoves", testDeleteBatchRemoves},
		{"DeleteBatchPerEntry", testDeleteBatchPerEntry},
		{"DeleteBatchBounds", testDeleteBatchBounds},
		{"DedupSuppressesResend", testDedupSuppressesResend},
		{"DedupExpires", testDedupExpires},
		{"SendBatchOfTen", testSendBatchOfTen},
		{"SendBatchOverMax", testSendBatchOverMax},
		{"SendCancelled", testSendCancelled},
		{"ReceiveMax", testReceiveMax},
		{"LongPollWakesOnSend", testLongPollWakesOnSend},
		{"ReceiveCancelled", testReceiveCancelled},
		{"AttributesRoundTrip", testAttributesRoundTrip},
		{"AttributesInvalid", testAttributesInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, s)
		})
	}
}

// deadline is how long the suite waits for something that must happen.
func (s *suite) deadline() time.Duration {
	return 15*time.Second + 3*s.f.shortVisibility()
}

// msg builds message i of group; its body and DedupID are "group-i".
func msg(group string, i int) queue.OutMessage {
	body := fmt.Sprintf("%s-%d", group, i)
	return queue.OutMessage{Group: group, DedupID: body, Body: []byte(body)}
}

// send sends msgs in batches of queue.MaxBatch and requires every entry to
// be accepted.
func send(t *testing.T, q queue.Queue, msgs ...queue.OutMessage) {
	t.Helper()
	for len(msgs) > 0 {
		n := min(len(msgs), queue.MaxBatch)
		res, err := q.SendBatch(t.Context(), msgs[:n])
		require.NoError(t, err)
		require.Len(t, res, n)
		for i, r := range res {
			require.NoError(t, r.Err, "entry %d", i)
		}
		msgs = msgs[n:]
	}
}

// receive makes one Receive call and checks the result's shape.
func (s *suite) receive(t *testing.T, q queue.Queue, p queue.ReceiveParams) []queue.Message {
	t.Helper()
	msgs, err := q.Receive(t.Context(), p)
	require.NoError(t, err)
	require.LessOrEqual(t, len(msgs), p.Max)
	s.checkMessages(t, msgs)
	return msgs
}

// receiveSome polls until a Receive returns at least one message, failing
// the test after the deadline.
func (s *suite) receiveSome(t *testing.T, q queue.Queue, maxMsgs int, visibility time.Duration) []queue.Message {
	t.Helper()
	end := time.Now().Add(s.deadline())
	for time.Now().Before(end) {
		msgs := s.receive(t, q, queue.ReceiveParams{Max: maxMsgs, Wait: s.f.pollWait(), Visibility: visibility})
		if len(msgs) > 0 {
			return msgs
		}
	}
	require.FailNow(t, "no message received before the deadline")
	return nil
}

// expectNone requires that a Receive waiting up to wait gets nothing.
func (s *suite) expectNone(t *testing.T, q queue.Queue, wait time.Duration) {
	t.Helper()
	msgs := s.receive(t, q, queue.ReceiveParams{Max: queue.MaxBatch, Wait: wait, Visibility: longVisibility})
	require.Empty(t, msgs, "expected no receivable message, got %s", bodies(msgs))
}

// checkMessages checks what every received message must satisfy, and that
// one Receive returns at most one message per group unless GroupBatch.
func (s *suite) checkMessages(t *testing.T, msgs []queue.Message) {
	t.Helper()
	groups := make(map[string]bool, len(msgs))
	for _, m := range msgs {
		require.NotEmpty(t, m.ID)
		require.NotEmpty(t, m.Group)
		require.NotEmpty(t, m.ReceiptHandle)
		require.GreaterOrEqual(t, m.ReceiveCount, 1)
		if !s.f.GroupBatch {
			require.False(t, groups[m.Group], "one Receive returned two messages of group %q: %s", m.Group, bodies(msgs))
		}
		groups[m.Group] = true
	}
}

// deleteAll deletes every message and requires success.
func deleteAll(t *testing.T, q queue.Queue, msgs []queue.Message) {
	t.Helper()
	for _, m := range msgs {
		require.NoError(t, q.Delete(t.Context(), m.ReceiptHandle))
	}
}

// bodies lists message bodies for failure messages.
func bodies(msgs []queue.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Body)
	}
	return out
}
