package main

import (
	"sync"
	"sync/atomic"
)

// roundTrips counts a process's round trips to its backends by
// "backend:operation" (mongo:find, sqs:ReceiveMessage), for `hooklane
// bench`. It is safe for concurrent use; a nil *roundTrips counts nothing.
type roundTrips struct {
	counts sync.Map // string → *atomic.Int64
}

// counter returns the function that counts one round trip of backend by
// operation name, or nil on a nil receiver (the adapters then install no
// hook at all).
func (r *roundTrips) counter(backend string) func(op string) {
	if r == nil {
		return nil
	}
	return func(op string) {
		key := backend + ":" + op
		n, ok := r.counts.Load(key)
		if !ok {
			n, _ = r.counts.LoadOrStore(key, new(atomic.Int64))
		}
		n.(*atomic.Int64).Add(1) //nolint:forcetypeassert // only *atomic.Int64 is stored
	}
}

// snapshot returns the counts so far.
func (r *roundTrips) snapshot() map[string]int64 {
	out := map[string]int64{}
	r.counts.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int64).Load() //nolint:forcetypeassert // see counter
		return true
	})
	return out
}
