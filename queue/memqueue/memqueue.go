// Package memqueue is the embedded queue adapter: an in-process FIFO queue
// with the semantics of an Amazon SQS FIFO queue (message groups, one
// message in flight per group, visibility timeouts, deduplication window),
// implementing [queue.Queue].
//
// Groups whose head is receivable wait in a ring and are served round-robin,
// so a busy group cannot starve the others. Visibility timeouts are expired
// lazily on every call; a long-polling Receive also arms a timer for the
// earliest expiry, so it wakes without polling. Nothing survives the
// process: the store is the source of truth and the pollers refill the queue
// after a restart.
package memqueue

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/hooklane/hooklane/queue"
)

const (
	// VisibilityTimeoutDefault is the default visibility timeout, SQS's.
	VisibilityTimeoutDefault = 30 * time.Second
	// DedupWindowDefault is the default deduplication window, SQS's.
	DedupWindowDefault = 5 * time.Minute
	// MaxBodySize is the largest message body accepted, SQS's limit.
	MaxBodySize = 256 << 10
	// MaxWait caps the wait of one Receive, as SQS does; a caller wanting
	// longer calls Receive again.
	MaxWait = 20 * time.Second
	// freeListMax bounds the recycled message structs kept for reuse.
	freeListMax = 1024
)

// Config configures a Queue.
type Config struct {
	// VisibilityTimeout is how long a received message stays invisible
	// when Receive asks for no specific timeout. Default 30 s.
	VisibilityTimeout time.Duration
	// DedupWindow is how long a DedupID suppresses resends. Default 5 min.
	DedupWindow time.Duration
	// NowFunc returns the current time; default time.Now. Tests inject a
	// clock to move visibility and dedup expiry without sleeping. Long-poll
	// waits always run on real time.
	NowFunc func() time.Time
}

// Stats is a snapshot of a Queue's contents.
type Stats struct {
	// Messages is the number of messages held, in flight included.
	Messages int
	// InFlight is the number of messages received and not yet deleted or
	// returned.
	InFlight int
	// Groups is the number of groups holding messages.
	Groups int
	// DedupIDs is the number of DedupIDs remembered for deduplication.
	DedupIDs int
	// Waiters is the number of Receive calls long-polling right now.
	Waiters int
}

// dedupEntry records when a DedupID stops suppressing resends. Entries are
// appended in send order, so with a fixed window they expire in order.
// Expiry times are nanoseconds after Queue.base, not time.Time: the queue
// remembers every DedupID for the whole window (300,000 at 1,000 messages/s
// and SQS's 5 minutes), and 8 bytes instead of 24 in both the map and the
// ring make that memory about a third smaller.
type dedupEntry struct {
	id      string
	expires int64
}

// Queue is an in-process SQS-FIFO-like queue. It is safe for concurrent use.
// Bodies of received messages share memory with the queue and must not be
// modified. The zero value is not usable; call New.
type Queue struct {
	cfg Config

	mu         sync.Mutex
	closed     bool
	groups     map[string]*group
	ready      ring[*group]        // groups with a receivable head, served round-robin
	inFlight   map[string]*message // by receipt handle
	visibility visibilityHeap      // in-flight messages by visibleAt
	base       time.Time           // origin of the dedup expiry times
	dedup      map[string]int64    // DedupID → end of its window, in ns after base
	dedupOrder ring[dedupEntry]    // the same, in expiry order, for pruning
	waiters    waiterList
	messages   int
	seq        uint64 // message IDs and receipt handles
	free       []*message
	freeGroups []*group
}

// New returns an empty queue. It panics on a negative duration in cfg, a
// programmer error.
func New(cfg Config) *Queue {
	if cfg.VisibilityTimeout < 0 || cfg.DedupWindow < 0 {
		panic(fmt.Sprintf("memqueue: negative VisibilityTimeout %s or DedupWindow %s", cfg.VisibilityTimeout, cfg.DedupWindow))
	}
	cfg.VisibilityTimeout = cmp.Or(cfg.VisibilityTimeout, VisibilityTimeoutDefault)
	cfg.DedupWindow = cmp.Or(cfg.DedupWindow, DedupWindowDefault)
	if cfg.NowFunc == nil {
		cfg.NowFunc = time.Now
	}
	return &Queue{
		cfg:      cfg,
		groups:   make(map[string]*group),
		inFlight: make(map[string]*message),
		base:     cfg.NowFunc(),
		dedup:    make(map[string]int64),
	}
}

// Close empties the queue and wakes every waiting Receive; from then on
// every method returns queue.ErrClosed. Closing twice is harmless.
func (q *Queue) Close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil
	}
	q.closed = true
	q.waiters.wake(q.waiters.n)
	q.groups, q.inFlight, q.dedup = nil, nil, nil
	q.ready, q.visibility, q.dedupOrder = ring[*group]{}, nil, ring[dedupEntry]{}
	q.free, q.freeGroups, q.messages = nil, nil, 0
	return nil
}

// Stats returns a snapshot of the queue's contents.
func (q *Queue) Stats() Stats {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.expireLocked(q.cfg.NowFunc())
	return Stats{Messages: q.messages, InFlight: len(q.inFlight), Groups: len(q.groups), DedupIDs: len(q.dedup), Waiters: q.waiters.n}
}

// Ping reports queue.ErrClosed after Close, nil before.
func (q *Queue) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return queue.ErrClosed
	}
	return nil
}

// SendBatch enqueues up to queue.MaxBatch messages. An entry without Group
// or DedupID, or with a body over MaxBodySize, fails on its own; an entry
// whose DedupID was sent within the dedup window is accepted and dropped.
func (q *Queue) SendBatch(ctx context.Context, msgs []queue.OutMessage) ([]queue.SendResult, error) {
	if len(msgs) > queue.MaxBatch {
		return nil, fmt.Errorf("send batch of %d: at most %d messages", len(msgs), queue.MaxBatch)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	results := make([]queue.SendResult, len(msgs))
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, queue.ErrClosed
	}
	now := q.cfg.NowFunc()
	q.pruneDedupLocked(now)
	at := q.sinceBase(now)
	readied := 0
	for i := range msgs {
		m := &msgs[i]
		if err := validate(m); err != nil {
			results[i].Err = fmt.Errorf("send message %d: %w", i, err)
			continue
		}
		if end, ok := q.dedup[m.DedupID]; ok && at < end {
			continue
		}
		end := at + int64(q.cfg.DedupWindow)
		q.dedup[m.DedupID] = end
		q.dedupOrder.push(dedupEntry{id: m.DedupID, expires: end})
		if q.enqueueLocked(m) {
			readied++
		}
	}
	q.waiters.wake(readied)
	return results, nil
}

// validate checks one outgoing message.
func validate(m *queue.OutMessage) error {
	var errs []error
	if m.Group == "" {
		errs = append(errs, errors.New("group is required"))
	}
	if m.DedupID == "" {
		errs = append(errs, errors.New("dedup id is required"))
	}
	if len(m.Body) > MaxBodySize {
		errs = append(errs, fmt.Errorf("body of %d bytes exceeds %d", len(m.Body), MaxBodySize))
	}
	if err := queue.CheckAttributes(m.Attributes); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// enqueueLocked appends a copy of m to its group and reports whether the
// group became ready.
func (q *Queue) enqueueLocked(m *queue.OutMessage) bool {
	g := q.groups[m.Group]
	if g == nil {
		g = q.newGroupLocked(m.Group)
	}
	msg := q.newMessageLocked()
	q.seq++
	msg.id = strconv.FormatUint(q.seq, 10)
	msg.body = append([]byte(nil), m.Body...)
	if len(m.Attributes) > 0 {
		msg.attributes = maps.Clone(m.Attributes)
	}
	msg.group = g
	g.append(msg)
	q.messages++
	return q.markReadyLocked(g)
}

// markReadyLocked puts g in the ready ring if its head is receivable and it
// is not there yet, and reports whether it did.
func (q *Queue) markReadyLocked(g *group) bool {
	if g.ready || !g.receivable() {
		return false
	}
	g.ready = true
	q.ready.push(g)
	return true
}

// newGroupLocked returns a registered empty group, recycled when possible.
func (q *Queue) newGroupLocked(name string) *group {
	var g *group
	if n := len(q.freeGroups); n > 0 {
		g = q.freeGroups[n-1]
		q.freeGroups = q.freeGroups[:n-1]
	} else {
		g = new(group)
	}
	g.name = name
	q.groups[name] = g
	return g
}

// newMessageLocked returns a zeroed message, recycled when possible.
func (q *Queue) newMessageLocked() *message {
	if n := len(q.free); n > 0 {
		m := q.free[n-1]
		q.free = q.free[:n-1]
		return m
	}
	return &message{heapIndex: -1}
}

// pruneDedupLocked forgets DedupIDs whose window has ended.
func (q *Queue) pruneDedupLocked(now time.Time) {
	at := q.sinceBase(now)
	for q.dedupOrder.len() > 0 {
		e := q.dedupOrder.front()
		if at < e.expires {
			return
		}
		q.dedupOrder.pop()
		// The ID may have been sent again after its window with a later
		// end; that newer entry owns the map slot.
		if end, ok := q.dedup[e.id]; ok && end <= e.expires {
			delete(q.dedup, e.id)
		}
	}
}

// sinceBase is t in the dedup expiry unit: nanoseconds after q.base (on
// the monotonic clock when both carry it).
func (q *Queue) sinceBase(t time.Time) int64 { return int64(t.Sub(q.base)) }

// Receive returns up to p.Max messages, at most one per group, taking groups
// round-robin. With nothing receivable it waits up to p.Wait (capped at 20 s)
// for a send, a delete or a visibility expiry to make something receivable.
func (q *Queue) Receive(ctx context.Context, p queue.ReceiveParams) ([]queue.Message, error) {
	if p.Max < 1 || p.Max > queue.MaxBatch {
		return nil, fmt.Errorf("receive %d messages: max must be 1 to %d", p.Max, queue.MaxBatch)
	}
	if p.Visibility < 0 {
		return nil, fmt.Errorf("receive with visibility %s: must not be negative", p.Visibility)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	visibility := cmp.Or(p.Visibility, q.cfg.VisibilityTimeout)

	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil, queue.ErrClosed
	}
	msgs := q.takeLocked(p.Max, visibility)
	q.mu.Unlock()
	if len(msgs) > 0 || p.Wait <= 0 {
		return msgs, nil
	}
	return q.wait(ctx, p.Max, visibility, min(p.Wait, MaxWait))
}

// wait long-polls: it sleeps until woken by a send, a delete, a returned
// message or the earliest visibility expiry, then tries again, until it
// gets messages, wait passes or ctx ends.
func (q *Queue) wait(ctx context.Context, maxMsgs int, visibility, wait time.Duration) ([]queue.Message, error) {
	w := &waiter{wake: make(chan struct{}, 1)}
	waitTimer := time.NewTimer(wait)
	defer waitTimer.Stop()
	var expiryTimer *time.Timer
	defer func() {
		if expiryTimer != nil {
			expiryTimer.Stop()
		}
	}()

	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return nil, queue.ErrClosed
		}
		// Unlist w before taking, so a wake-up takeLocked sends is meant
		// for another waiter and cannot be swallowed by this one.
		q.waiters.remove(w)
		if msgs := q.takeLocked(maxMsgs, visibility); len(msgs) > 0 {
			q.mu.Unlock()
			return msgs, nil
		}
		q.waiters.push(w)
		var expiryC <-chan time.Time
		if len(q.visibility) > 0 {
			d := q.visibility[0].visibleAt.Sub(q.cfg.NowFunc())
			if expiryTimer == nil {
				expiryTimer = time.NewTimer(d)
			} else {
				expiryTimer.Reset(d)
			}
			expiryC = expiryTimer.C
		}
		q.mu.Unlock()

		select {
		case <-w.wake:
		case <-expiryC:
		case <-waitTimer.C:
			return q.leave(w, maxMsgs, visibility, nil)
		case <-ctx.Done():
			return q.leave(w, 0, visibility, ctx.Err())
		}
	}
}

// leave ends a wait: it unlists w, takes what is receivable when maxMsgs is
// positive, and passes on a wake-up w may have swallowed so no other waiter
// misses a receivable group.
func (q *Queue) leave(w *waiter, maxMsgs int, visibility time.Duration, err error) ([]queue.Message, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, queue.ErrClosed
	}
	q.waiters.remove(w)
	var msgs []queue.Message
	if maxMsgs > 0 {
		msgs = q.takeLocked(maxMsgs, visibility)
	}
	q.waiters.wake(q.ready.len())
	return msgs, err
}

// takeLocked expires overdue visibility timeouts, then receives up to
// maxMsgs group heads round-robin. It wakes another waiter when receivable
// groups remain.
func (q *Queue) takeLocked(maxMsgs int, visibility time.Duration) []queue.Message {
	now := q.cfg.NowFunc()
	q.expireLocked(now)
	n := min(maxMsgs, q.ready.len())
	if n == 0 {
		return nil
	}
	out := make([]queue.Message, n)
	earliest := false
	for i := range out {
		g := q.ready.pop()
		g.ready = false
		m := g.head
		g.busy = true
		m.receiveCount++
		q.seq++
		m.receipt = "r" + strconv.FormatUint(q.seq, 10)
		m.visibleAt = now.Add(visibility)
		q.inFlight[m.receipt] = m
		heap.Push(&q.visibility, m)
		if m.heapIndex == 0 {
			earliest = true
		}
		out[i] = queue.Message{ID: m.id, Group: g.name, Body: m.body, ReceiptHandle: m.receipt, ReceiveCount: m.receiveCount, Attributes: m.attributes}
	}
	// Waiters sleep until the earliest expiry they saw; one must look again
	// when an expiry now comes sooner, and one more must come for any
	// groups left receivable.
	if earliest || q.ready.len() > 0 {
		q.waiters.wake(1)
	}
	return out
}

// expireLocked returns every in-flight message whose visibility timeout has
// passed to the head of its group, invalidating its receipt handle.
func (q *Queue) expireLocked(now time.Time) {
	readied := 0
	for len(q.visibility) > 0 && !now.Before(q.visibility[0].visibleAt) {
		m := heap.Pop(&q.visibility).(*message) //nolint:forcetypeassert // only *message is ever pushed
		if q.returnLocked(m) {
			readied++
		}
	}
	q.waiters.wake(readied)
}

// returnLocked ends m's flight without deleting it; it is receivable again,
// ahead of the rest of its group. It reports whether the group became ready.
func (q *Queue) returnLocked(m *message) bool {
	delete(q.inFlight, m.receipt)
	m.receipt = ""
	m.group.busy = false
	return q.markReadyLocked(m.group)
}

// Delete removes a received message for good. It returns
// queue.ErrInvalidReceipt when the handle is unknown, already used, or
// stale because the message's visibility timeout expired.
func (q *Queue) Delete(ctx context.Context, receiptHandle string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.deleteLocked(receiptHandle); err != nil {
		return fmt.Errorf("delete message: %w", err)
	}
	return nil
}

// deleteLocked removes the in-flight message of a receipt handle.
func (q *Queue) deleteLocked(receiptHandle string) error {
	m, err := q.inFlightLocked(receiptHandle)
	if err != nil {
		return err
	}
	heap.Remove(&q.visibility, m.heapIndex)
	delete(q.inFlight, receiptHandle)
	g := m.group
	g.popHead()
	g.busy = false
	q.messages--
	if g.head == nil {
		delete(q.groups, g.name)
		*g = group{}
		if len(q.freeGroups) < freeListMax {
			q.freeGroups = append(q.freeGroups, g)
		}
	} else if q.markReadyLocked(g) {
		q.waiters.wake(1)
	}
	*m = message{heapIndex: -1}
	if len(q.free) < freeListMax {
		q.free = append(q.free, m)
	}
	return nil
}

// DeleteBatch deletes each message as Delete does, under one lock; the
// results match receiptHandles one to one.
func (q *Queue) DeleteBatch(ctx context.Context, receiptHandles []string) ([]error, error) {
	if len(receiptHandles) > queue.MaxBatch {
		return nil, fmt.Errorf("delete batch: %d handles, more than %d", len(receiptHandles), queue.MaxBatch)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(receiptHandles) == 0 {
		return nil, nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, fmt.Errorf("delete batch: %w", queue.ErrClosed)
	}
	results := make([]error, len(receiptHandles))
	for i, h := range receiptHandles {
		if err := q.deleteLocked(h); err != nil {
			results[i] = fmt.Errorf("delete message: %w", err)
		}
	}
	return results, nil
}

// ChangeVisibility sets the remaining invisibility of an in-flight message
// to d from now; d = 0 makes it receivable at once and spends the handle.
// It returns queue.ErrInvalidReceipt as Delete does.
func (q *Queue) ChangeVisibility(ctx context.Context, receiptHandle string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("change visibility to %s: must not be negative", d)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	m, err := q.inFlightLocked(receiptHandle)
	if err != nil {
		return fmt.Errorf("change visibility: %w", err)
	}
	if d == 0 {
		heap.Remove(&q.visibility, m.heapIndex)
		if q.returnLocked(m) {
			q.waiters.wake(1)
		}
		return nil
	}
	m.visibleAt = q.cfg.NowFunc().Add(d)
	heap.Fix(&q.visibility, m.heapIndex)
	if m.heapIndex == 0 {
		// The earliest expiry may now come sooner than waiters expect.
		q.waiters.wake(1)
	}
	return nil
}

// inFlightLocked finds the in-flight message of a receipt handle after
// expiring overdue visibility timeouts.
func (q *Queue) inFlightLocked(receiptHandle string) (*message, error) {
	if q.closed {
		return nil, queue.ErrClosed
	}
	q.expireLocked(q.cfg.NowFunc())
	m, ok := q.inFlight[receiptHandle]
	if !ok {
		return nil, queue.ErrInvalidReceipt
	}
	return m, nil
}
