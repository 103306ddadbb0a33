package dispatch

import (
	"context"
	"fmt"
	"sync"
)

// circuitLocks serializes, within one lifecycle, the writes to a
// subscription's circuit that count an outcome, free a probe slot or reset
// it (a gate taking the probe slot keeps its race). Circuit writes are
// version-checked, so they stay correct without it; but when a pool's
// deliveries to a failing endpoint end together, tens of counts race for
// one circuit, each loser re-reads and tries again, and a count that loses
// every try is lost — the circuit then opens later than its threshold, and
// more requests reach an endpoint that is down. Taken in turn, the counts
// of one instance never conflict; only other instances' writes can.
type circuitLocks struct {
	mu sync.Mutex
	m  map[string]*circuitLock
}

// circuitLock is one subscription's lock: a token in a channel, so a
// waiter can give up with its context; refs counts its holders and
// waiters, and the last one out removes it.
type circuitLock struct {
	token chan struct{}
	refs  int
}

func newCircuitLocks() *circuitLocks {
	return &circuitLocks{m: make(map[string]*circuitLock)}
}

// lock takes subscriptionID's lock, waiting at most until ctx ends, and
// returns its release.
func (cl *circuitLocks) lock(ctx context.Context, subscriptionID string) (func(), error) {
	cl.mu.Lock()
	l, ok := cl.m[subscriptionID]
	if !ok {
		l = &circuitLock{token: make(chan struct{}, 1)}
		l.token <- struct{}{}
		cl.m[subscriptionID] = l
	}
	l.refs++
	cl.mu.Unlock()

	leave := func() {
		cl.mu.Lock()
		defer cl.mu.Unlock()
		if l.refs--; l.refs == 0 {
			delete(cl.m, subscriptionID)
		}
	}
	select {
	case <-l.token:
		return func() {
			l.token <- struct{}{}
			leave()
		}, nil
	case <-ctx.Done():
		leave()
		return nil, fmt.Errorf("wait for the lock: %w", context.Cause(ctx))
	}
}
