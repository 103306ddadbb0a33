package router

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/time/rate"

	"github.com/hooklane/hooklane/dispatch"
)

// Pool is the runtime side of a dispatch pool: a concurrency budget and a
// start-rate token bucket shared by the deliveries of its subscriptions.
// Each pool has its own budget, so a slow target in one pool never takes
// slots from another.
type Pool struct {
	def     dispatch.Pool
	slots   chan struct{}
	limiter *rate.Limiter // nil: no rate limit
	// held counts the deliveries of this router that run in the pool or
	// wait for its slot.
	held atomic.Int64
}

// TryHold counts one more delivery running in or waiting for the pool when
// fewer than limit are; it reports false (counting nothing) otherwise. A
// true result must be matched by Unhold.
func (p *Pool) TryHold(limit int) bool {
	for {
		n := p.held.Load()
		if n >= int64(max(limit, 1)) {
			return false
		}
		if p.held.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Unhold undoes one successful TryHold.
func (p *Pool) Unhold() { p.held.Add(-1) }

// Held is how many deliveries run in or wait for the pool now.
func (p *Pool) Held() int { return int(p.held.Load()) }

func newPool(def dispatch.Pool) *Pool {
	p := &Pool{def: def, slots: make(chan struct{}, max(def.Concurrency, 1))}
	if def.RatePerSecond != nil && *def.RatePerSecond > 0 {
		p.limiter = rate.NewLimiter(rate.Limit(*def.RatePerSecond), max(def.Burst, 1))
	}
	return p
}

// Acquire waits for a concurrency slot and a rate token. It returns ctx's
// error when ctx ends first; on success the caller must call Release.
func (p *Pool) Acquire(ctx context.Context) error {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("wait for pool %s slot: %w", p.def.Code, ctx.Err())
	}
	if p.limiter != nil {
		if err := p.limiter.Wait(ctx); err != nil {
			<-p.slots
			return fmt.Errorf("wait for pool %s rate: %w", p.def.Code, err)
		}
	}
	return nil
}

// Release frees the slot taken by Acquire.
func (p *Pool) Release() { <-p.slots }

// InFlight is how many deliveries hold a slot now.
func (p *Pool) InFlight() int { return len(p.slots) }

// Definition is the pool's stored definition.
func (p *Pool) Definition() dispatch.Pool { return p.def }

// PoolLookup reads pool definitions.
type PoolLookup interface {
	PoolGetByID(ctx context.Context, id string) (*dispatch.Pool, error)
	PoolGetByCode(ctx context.Context, code string) (*dispatch.Pool, error)
}

// Pools holds the runtime pools by id, created on first use from the store.
// A pool whose definition changes is replaced on Invalidate: deliveries in
// flight finish under the old budget, new ones use the new one.
type Pools struct {
	store PoolLookup
	mu    sync.Mutex
	byID  map[string]*Pool
	// defaultID is the id of the pool with code "default".
	defaultID string
}

// NewPools returns an empty pool registry reading definitions from store.
func NewPools(store PoolLookup) *Pools {
	return &Pools{store: store, byID: make(map[string]*Pool)}
}

// Get returns the runtime pool with id, or the default pool when id is "".
func (ps *Pools) Get(ctx context.Context, id string) (*Pool, error) {
	ps.mu.Lock()
	if id == "" {
		id = ps.defaultID
	}
	if p, ok := ps.byID[id]; ok && id != "" {
		ps.mu.Unlock()
		return p, nil
	}
	ps.mu.Unlock()
	var def *dispatch.Pool
	var err error
	if id == "" {
		def, err = ps.store.PoolGetByCode(ctx, dispatch.DefaultPoolCode)
	} else {
		def, err = ps.store.PoolGetByID(ctx, id)
	}
	if err != nil {
		if id == "" {
			return nil, fmt.Errorf("get default pool: %w", err)
		}
		// A deleted pool's jobs fall back to the default pool.
		return ps.Get(ctx, "")
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if def.Code == dispatch.DefaultPoolCode {
		ps.defaultID = def.ID
	}
	if p, ok := ps.byID[def.ID]; ok {
		return p, nil
	}
	p := newPool(*def)
	ps.byID[def.ID] = p
	return p, nil
}

// Invalidate drops the runtime pool with id so the next Get reads its new
// definition.
func (ps *Pools) Invalidate(id string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	delete(ps.byID, id)
}

// Snapshot returns the runtime pools created so far.
func (ps *Pools) Snapshot() []*Pool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	out := make([]*Pool, 0, len(ps.byID))
	for _, p := range ps.byID {
		out = append(out, p)
	}
	return out
}
