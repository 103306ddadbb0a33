package store

import (
	"context"
	"sync/atomic"
)

// Handoff settles the fate of a write a caller handed to a store's writer
// goroutine between the two that could decide it: the writer, which takes
// the write to run and commit it, and the caller, whose context ended
// first and abandons it. Exactly one of them wins. So a caller answered
// ctx.Err() knows its write never ran, and a caller whose write was taken
// waits for its commit's answer — instead of reporting a failure for a
// write that then lands (a job moved to QUEUED whose message is never
// sent, say). The zero value is a write not yet decided.
type Handoff struct{ state atomic.Uint32 }

// Handoff states.
const (
	handoffWaiting uint32 = iota
	handoffTaken
	handoffAbandoned
)

// Take is the writer's claim on the write, with ctx the caller's context:
// nil means the writer runs it; an error (the context's) means the caller
// gave up first, or its context has ended and Take abandons the write, and
// the writer must not run it.
func (h *Handoff) Take(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		h.state.CompareAndSwap(handoffWaiting, handoffAbandoned)
		return err
	}
	if !h.state.CompareAndSwap(handoffWaiting, handoffTaken) {
		return context.Canceled
	}
	return nil
}

// Await returns the write's answer from done, or ctx.Err() when ctx ends
// before the writer took the write. Once the writer took it, Await waits
// for the answer however long the commit takes: the write may land.
func (h *Handoff) Await(ctx context.Context, done <-chan error) error {
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		if h.state.CompareAndSwap(handoffWaiting, handoffAbandoned) {
			return ctx.Err()
		}
		return <-done
	}
}
