package sqsqueue_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/queue"
	"github.com/hooklane/hooklane/queue/sqsqueue"
)

func TestOnCallFuncCountsEveryRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, sqsqueue.CreateQueueParams{})
	var mu sync.Mutex
	calls := map[string]int{}
	q, err := sqsqueue.New(t.Context(), sqsqueue.Config{QueueURL: b.url, Client: b.client, OnCallFunc: func(op string) {
		mu.Lock()
		defer mu.Unlock()
		calls[op]++
	}})
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, q.Ping(ctx))
	res, err := q.SendBatch(ctx, []queue.OutMessage{
		{Group: "a", DedupID: "a0", Body: []byte("a0")},
		{Group: "b", DedupID: "b0", Body: []byte("b0")},
	})
	require.NoError(t, err)
	require.Len(t, res, 2)
	var got []queue.Message
	for len(got) < 2 {
		msgs, err := q.Receive(ctx, queue.ReceiveParams{Max: queue.MaxBatch, Wait: sqsqueue.MaxWait})
		require.NoError(t, err)
		got = append(got, msgs...)
	}
	del, err := q.DeleteBatch(ctx, []string{got[0].ReceiptHandle, got[1].ReceiptHandle})
	require.NoError(t, err)
	require.Equal(t, []error{nil, nil}, del)

	mu.Lock()
	defer mu.Unlock()
	receives := calls["ReceiveMessage"]
	require.Positive(t, receives)
	require.Equal(t, map[string]int{
		"GetQueueAttributes": 1, "SendMessageBatch": 1, "ReceiveMessage": receives, "DeleteMessageBatch": 1,
	}, calls)
	// The queue of setup, built without the hook, counts nothing here.
	require.NoError(t, b.queue.Ping(ctx))
	require.Equal(t, 1, calls["GetQueueAttributes"])
}
