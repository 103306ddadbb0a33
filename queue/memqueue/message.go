package memqueue

import "time"

// message is one stored message. It sits in its group's FIFO list until it
// is deleted; while in flight it is that list's head and is also indexed by
// receipt handle and held in the visibility heap.
type message struct {
	id           string
	body         []byte
	attributes   map[string]string // nil when sent without any
	group        *group
	next         *message // next message of the group, in send order
	receiveCount int
	receipt      string    // current receipt handle; "" when not in flight
	visibleAt    time.Time // when an in-flight message becomes receivable again
	heapIndex    int       // position in the visibility heap; -1 when absent
}

// group is a message group: a FIFO list of messages, of which only the head
// can be in flight.
type group struct {
	name       string
	head, tail *message
	busy       bool // head is in flight
	ready      bool // in the queue's ready ring
}

// append adds m at the tail.
func (g *group) append(m *message) {
	if g.tail == nil {
		g.head = m
	} else {
		g.tail.next = m
	}
	g.tail = m
}

// popHead removes the head message and returns it.
func (g *group) popHead() *message {
	m := g.head
	g.head = m.next
	if g.head == nil {
		g.tail = nil
	}
	m.next = nil
	return m
}

// receivable reports whether the group's head can be received.
func (g *group) receivable() bool { return g.head != nil && !g.busy }
