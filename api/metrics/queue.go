package metrics

import (
	"context"
	"errors"

	"github.com/hooklane/hooklane/queue"
)

// Queue wraps a queue.Queue and counts its failed operations in
// hooklane_queue_errors_total. It changes no behaviour: every call and
// error passes through unchanged.
type Queue struct {
	queue.Queue

	m *Metrics
}

// InstrumentQueue returns q counted by m.
func (m *Metrics) InstrumentQueue(q queue.Queue) *Queue { return &Queue{Queue: q, m: m} }

// SendBatch sends msgs; a failed call counts every message, a partial
// failure counts the failed entries.
func (q *Queue) SendBatch(ctx context.Context, msgs []queue.OutMessage) ([]queue.SendResult, error) {
	res, err := q.Queue.SendBatch(ctx, msgs)
	if err != nil {
		q.m.ObserveQueueError("send", len(msgs))
		return res, err
	}
	failed := 0
	for _, r := range res {
		if r.Err != nil {
			failed++
		}
	}
	q.m.ObserveQueueError("send", failed)
	return res, nil
}

// Receive receives messages; a failure is counted unless ctx ended (a
// shutdown is not a queue error).
func (q *Queue) Receive(ctx context.Context, p queue.ReceiveParams) ([]queue.Message, error) {
	msgs, err := q.Queue.Receive(ctx, p)
	if err != nil && ctx.Err() == nil {
		q.m.ObserveQueueError("receive", 1)
	}
	return msgs, err
}

// Delete deletes a message; failures other than an expired receipt count.
func (q *Queue) Delete(ctx context.Context, receiptHandle string) error {
	err := q.Queue.Delete(ctx, receiptHandle)
	if err != nil && !errors.Is(err, queue.ErrInvalidReceipt) && ctx.Err() == nil {
		q.m.ObserveQueueError("delete", 1)
	}
	return err
}

// DeleteBatch deletes messages; a failed call counts every handle, a
// partial failure the failed entries other than expired receipts.
func (q *Queue) DeleteBatch(ctx context.Context, receiptHandles []string) ([]error, error) {
	res, err := q.Queue.DeleteBatch(ctx, receiptHandles)
	if err != nil {
		if ctx.Err() == nil {
			q.m.ObserveQueueError("delete", len(receiptHandles))
		}
		return res, err
	}
	failed := 0
	for _, e := range res {
		if e != nil && !errors.Is(e, queue.ErrInvalidReceipt) {
			failed++
		}
	}
	q.m.ObserveQueueError("delete", failed)
	return res, nil
}
