package memqueue

// ring is a growable FIFO ring buffer. It reuses its backing array, so a
// steady flow of pushes and pops allocates nothing.
type ring[T any] struct {
	buf  []T
	head int
	n    int
}

// len reports how many items the ring holds.
func (r *ring[T]) len() int { return r.n }

// push appends v at the back.
func (r *ring[T]) push(v T) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)%len(r.buf)] = v
	r.n++
}

// front returns the item at the front; the ring must not be empty.
func (r *ring[T]) front() T { return r.buf[r.head] }

// pop removes and returns the item at the front; the ring must not be empty.
func (r *ring[T]) pop() T {
	var zero T
	v := r.buf[r.head]
	r.buf[r.head] = zero // drop the reference for the garbage collector
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	return v
}

// grow doubles the capacity, keeping the order.
func (r *ring[T]) grow() {
	buf := make([]T, max(2*len(r.buf), 16))
	for i := range r.n {
		buf[i] = r.buf[(r.head+i)%len(r.buf)]
	}
	r.buf = buf
	r.head = 0
}
