// Package queue is the port between Hooklane and a FIFO message queue.
//
// The queue is only a fast path: the store is the source of truth, and every
// message refers to a record the store already holds. Losing the whole queue
// loses no work; the pollers rebuild it.
//
// # Contract
//
// Adapters (queue/memqueue, queue/sqsqueue) implement [Queue] with the
// semantics of an Amazon SQS FIFO queue:
//
//   - Messages with the same Group are received in the order they were sent,
//     and at most one message of a group is in flight (received and neither
//     deleted nor returned by an expired visibility timeout) at a time.
//     Messages of different groups are independent.
//   - A received message stays invisible for the visibility timeout; when it
//     is not deleted before then it becomes receivable again (at-least-once),
//     ahead of later messages of its group.
//   - A message whose DedupID equals that of a message sent within the dedup
//     window is accepted but not enqueued again.
//   - A message's Attributes (at most MaxAttributes short text values, such
//     as a W3C traceparent) are received exactly as sent, on every delivery
//     of the message; an entry whose attributes fail CheckAttributes is
//     refused (as a per-entry or a whole-call error), never sent without
//     them.
//   - All methods are safe for concurrent use. Cancelling ctx aborts a call;
//     a cancelled Receive returns what it has (possibly nothing) and ctx.Err().
//
// [Batcher] wraps a Queue so that concurrent callers' sends and deletes
// share batch calls (with SQS: one API call, one round trip, for up to
// MaxBatch entries); the gateway puts it in front of SQS.
package queue

import (
	"context"
	"errors"
	"time"
)

// MaxBatch is the largest number of entries one SendBatch, DeleteBatch or
// Receive call handles, the SQS limit.
const MaxBatch = 10

var (
	// ErrNotFound is returned when the queue does not exist.
	ErrNotFound = errors.New("queue not found")

	// ErrClosed is returned by a queue that has been closed.
	ErrClosed = errors.New("queue closed")

	// ErrInvalidReceipt is returned by Delete or ChangeVisibility when the
	// receipt handle is unknown or no longer current (the message was
	// redelivered to someone else or already deleted).
	ErrInvalidReceipt = errors.New("invalid receipt handle")
)

// OutMessage is one message to send.
type OutMessage struct {
	// Group orders messages: within a group they are received in send order,
	// one in flight at a time. Required.
	Group string
	// DedupID identifies the message for deduplication within the dedup
	// window. Required.
	DedupID string
	// Body is the message payload (at most 256 KiB).
	Body []byte
	// Attributes are optional metadata that travel beside the body, such
	// as the trace context of the job the message stands for. Nil or empty
	// sends none; otherwise they must pass CheckAttributes. The queue keeps
	// its own copy.
	Attributes map[string]string
}

// SendResult is the outcome of one entry of a SendBatch call, in the order of
// the entries sent.
type SendResult struct {
	// Err is nil when the entry was accepted.
	Err error
}

// Message is a received message.
type Message struct {
	// ID is the queue's identifier of the message.
	ID string
	// Group is the message group it was sent with.
	Group string
	// Body is the payload as sent.
	Body []byte
	// ReceiptHandle identifies this delivery of the message for Delete and
	// ChangeVisibility. Each receive issues a new handle.
	ReceiptHandle string
	// ReceiveCount is how many times the message has been received,
	// including this time (1 on first receipt).
	ReceiveCount int
	// Attributes are the attributes the message was sent with; nil when it
	// had none. Callers must not modify the map.
	Attributes map[string]string
}

// ReceiveParams are the arguments of Receive.
type ReceiveParams struct {
	// Max is how many messages to return at most, 1 to MaxBatch.
	Max int
	// Wait is how long to long-poll when nothing is available; 0 returns at
	// once. Adapters may cap it (SQS: 20 s).
	Wait time.Duration
	// Visibility is how long received messages stay invisible; 0 uses the
	// queue's default.
	Visibility time.Duration
}

// Queue is a FIFO queue with message groups. See the package documentation
// for the contract.
type Queue interface {
	// SendBatch sends up to MaxBatch messages. The returned error is non-nil
	// only when the whole call failed; per-entry failures are reported in
	// the results, which match msgs one to one.
	SendBatch(ctx context.Context, msgs []OutMessage) ([]SendResult, error)
	// Receive returns up to p.Max messages, waiting up to p.Wait for the
	// first one.
	Receive(ctx context.Context, p ReceiveParams) ([]Message, error)
	// Delete removes a received message for good.
	Delete(ctx context.Context, receiptHandle string) error
	// DeleteBatch removes up to MaxBatch received messages for good, as
	// Delete does each of them, in one call. The returned error is non-nil
	// only when the whole call failed (nothing is known to be deleted);
	// per-entry failures, ErrInvalidReceipt among them, are reported in the
	// results, which match receiptHandles one to one (nil: deleted). An
	// empty call does nothing.
	DeleteBatch(ctx context.Context, receiptHandles []string) ([]error, error)
	// ChangeVisibility sets the remaining invisibility of a received message
	// to d from now; d = 0 makes it receivable at once.
	ChangeVisibility(ctx context.Context, receiptHandle string, d time.Duration) error
	// Ping reports whether the queue is reachable.
	Ping(ctx context.Context) error
}
