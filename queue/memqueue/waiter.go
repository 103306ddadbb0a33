package memqueue

// waiter is one Receive long-polling for messages. It sits in an intrusive
// doubly linked list so that leaving the list allocates nothing and costs
// O(1).
type waiter struct {
	wake       chan struct{} // buffered(1): a signal that messages may be receivable
	prev, next *waiter
	listed     bool
}

// waiterList is a FIFO of waiters.
type waiterList struct {
	head, tail *waiter
	n          int
}

// push appends w at the back.
func (l *waiterList) push(w *waiter) {
	w.prev, w.next = l.tail, nil
	if l.tail == nil {
		l.head = w
	} else {
		l.tail.next = w
	}
	l.tail = w
	w.listed = true
	l.n++
}

// remove takes w out of the list if it is listed.
func (l *waiterList) remove(w *waiter) {
	if !w.listed {
		return
	}
	if w.prev == nil {
		l.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		l.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next, w.listed = nil, nil, false
	l.n--
}

// wake signals up to n waiters, first come first served, and unlists them.
// A signalled waiter re-lists itself if it finds nothing.
func (l *waiterList) wake(n int) {
	for ; n > 0 && l.head != nil; n-- {
		w := l.head
		l.remove(w)
		select {
		case w.wake <- struct{}{}:
		default: // already signalled
		}
	}
}
