package queue

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Defaults of a Batcher.
const (
	// LingerDefault is how long a Batcher holds the first entry of a
	// batch for more callers to join it, unless the batch fills first.
	LingerDefault = 5 * time.Millisecond
	// batchCallTimeout bounds one shared call: it serves several callers,
	// so no single caller's ctx may end it.
	batchCallTimeout = 30 * time.Second
)

// BatcherConfig configures NewBatcher.
type BatcherConfig struct {
	// Linger is how long the first entry of a batch waits for more
	// callers' entries before the batch is sent, unless it fills up
	// (MaxBatch entries) first. 0 uses LingerDefault; a negative value
	// sends every call at once (no coalescing).
	Linger time.Duration
}

// Batcher is a Queue that coalesces the sends and the deletes of
// concurrent callers into shared calls of up to MaxBatch entries on the
// queue it wraps, sent when full or after the linger: with SQS, one API
// call for up to ten messages. Receive, ChangeVisibility and Ping pass
// through.
//
// Each caller's entries stay together and in their order within one shared
// call, so a caller's per-group order holds (SQS FIFO keeps the entry order
// of one batch); callers that run concurrently had no order between them to
// keep. Each caller waits for and receives the results of its own entries,
// as from a call of its own; a failed shared call fails every caller in it.
// A caller whose ctx is already done is refused before joining a batch;
// once joined, it waits for the shared call (bounded by its own timeout),
// so its answer always says what became of its entries.
type Batcher struct {
	Queue

	sends   coalescer[OutMessage, SendResult]
	deletes coalescer[string, error]
}

// NewBatcher returns a Batcher on q.
func NewBatcher(q Queue, cfg BatcherConfig) *Batcher {
	linger := cfg.Linger
	if linger == 0 {
		linger = LingerDefault
	}
	b := &Batcher{Queue: q}
	b.sends = coalescer[OutMessage, SendResult]{linger: linger, call: q.SendBatch}
	b.deletes = coalescer[string, error]{linger: linger, call: q.DeleteBatch}
	return b
}

// SendBatch sends msgs within a shared SendBatch call.
func (b *Batcher) SendBatch(ctx context.Context, msgs []OutMessage) ([]SendResult, error) {
	if len(msgs) == 0 || len(msgs) > MaxBatch {
		return b.Queue.SendBatch(ctx, msgs)
	}
	return b.sends.submit(ctx, msgs)
}

// DeleteBatch deletes within a shared DeleteBatch call.
func (b *Batcher) DeleteBatch(ctx context.Context, receiptHandles []string) ([]error, error) {
	if len(receiptHandles) == 0 || len(receiptHandles) > MaxBatch {
		return b.Queue.DeleteBatch(ctx, receiptHandles)
	}
	return b.deletes.submit(ctx, receiptHandles)
}

// Delete deletes one message within a shared DeleteBatch call.
func (b *Batcher) Delete(ctx context.Context, receiptHandle string) error {
	res, err := b.deletes.submit(ctx, []string{receiptHandle})
	if err != nil {
		return err
	}
	return res[0]
}

// coalescer gathers the entries of concurrent callers into shared calls.
type coalescer[T, R any] struct {
	linger time.Duration
	call   func(ctx context.Context, entries []T) ([]R, error)

	mu      sync.Mutex
	pending *batch[T, R]
}

// batch is one shared call being gathered, then made.
type batch[T, R any] struct {
	ctx     context.Context //nolint:containedctx // the first caller's values, for the shared call
	entries []T
	waiters []*waiter[R]
	timer   *time.Timer
}

// waiter is one caller of a batch: where its entries are, and its answer.
type waiter[R any] struct {
	offset, n int
	res       []R
	err       error
	done      chan struct{}
}

// submit adds a caller's entries (1 to MaxBatch) to the pending batch and
// waits for their results.
func (c *coalescer[T, R]) submit(ctx context.Context, entries []T) ([]R, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w := &waiter[R]{n: len(entries), done: make(chan struct{})}
	var ready []*batch[T, R]
	c.mu.Lock()
	if c.pending != nil && len(c.pending.entries)+len(entries) > MaxBatch {
		// No room: the pending batch goes now, this caller starts the next.
		ready = append(ready, c.take())
	}
	if c.pending == nil {
		c.pending = &batch[T, R]{ctx: context.WithoutCancel(ctx), entries: make([]T, 0, MaxBatch)}
		if c.linger > 0 {
			b := c.pending
			b.timer = time.AfterFunc(c.linger, func() { c.flushIfPending(b) })
		}
	}
	b := c.pending
	w.offset = len(b.entries)
	b.entries = append(b.entries, entries...)
	b.waiters = append(b.waiters, w)
	if len(b.entries) == MaxBatch || c.linger < 0 {
		ready = append(ready, c.take())
	}
	c.mu.Unlock()
	for _, r := range ready {
		c.send(r) //nolint:contextcheck // a shared call outlives any one caller's ctx: it runs under the batcher's own
	}
	<-w.done
	return w.res, w.err
}

// take removes the pending batch; c.mu is held.
func (c *coalescer[T, R]) take() *batch[T, R] {
	b := c.pending
	c.pending = nil
	if b.timer != nil {
		b.timer.Stop()
	}
	return b
}

// flushIfPending sends b when its linger ends and it is still pending.
func (c *coalescer[T, R]) flushIfPending(b *batch[T, R]) {
	c.mu.Lock()
	if c.pending != b {
		c.mu.Unlock()
		return // sent already, full or pushed out
	}
	c.take()
	c.mu.Unlock()
	c.send(b)
}

// send makes the shared call and answers every caller of b.
func (c *coalescer[T, R]) send(b *batch[T, R]) {
	ctx, cancel := context.WithTimeout(b.ctx, batchCallTimeout)
	defer cancel()
	res, err := c.call(ctx, b.entries)
	if err == nil && len(res) != len(b.entries) {
		err = errResultCount
	}
	for _, w := range b.waiters {
		if err != nil {
			w.err = err
		} else {
			w.res = res[w.offset : w.offset+w.n : w.offset+w.n]
		}
		close(w.done)
	}
}

// errResultCount is a shared call's answer with results that do not match
// its entries one to one.
var errResultCount = errors.New("batch call: results do not match the entries")
