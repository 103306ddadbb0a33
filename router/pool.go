package router

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/hooklane/hooklane/dispatch/pool"
)

// Pool is the runtime side of a dispatch pool: a concurrency budget and a
// start-rate token bucket shared by the deliveries of its subscriptions.
// Each pool has its own budget, so a slow target in one pool never takes
// slots from another.
type Pool struct {
	def     pool.Pool
	slots   chan struct{}
	limiter *rate.Limiter // nil: no rate limit
	// held counts the deliveries of this router that run in the pool or
	// wait for its slot.
	held atomic.Int64
	// avgDelivery is a moving average of the pool's delivery durations in
	// nanoseconds (0 until the first one ended).
	avgDelivery atomic.Int64
	// firstStart is when the pool's first delivery got its slot (unix
	// nanoseconds; 0 before): until one ended, the time since then stands
	// in for the delivery time.
	firstStart atomic.Int64
	// room hands one wake-up per Unhold to a caller of WaitRoom; waiting
	// counts those callers, so Unhold sends only when one may listen.
	room    chan struct{}
	waiting atomic.Int64
}

// observe adds one delivery's duration to the moving average (weight 1/8).
// Concurrent updates may lose one another's sample: an estimate.
func (p *Pool) observe(d time.Duration) {
	old := p.avgDelivery.Load()
	if old == 0 {
		p.avgDelivery.Store(int64(d))
		return
	}
	p.avgDelivery.Store(old + (int64(d)-old)/8)
}

// DrainEstimate is about half the time the deliveries this router holds for
// the pool (running or waiting for a slot) take to drain at its concurrency, rate and
// recent delivery time (before the first delivery ended: the time since
// the first one started), clamped to [lo, hi]. A message the pool cannot hold goes back to the queue for
// about this long, so it comes back when the pool has room for it instead
// of after a fixed delay (a fixed second left slots idle while work
// waited), and the queue is not asked again much sooner than useful.
func (p *Pool) DrainEstimate(lo, hi time.Duration) time.Duration {
	held := time.Duration(max(p.held.Load(), 1))
	avg := time.Duration(p.avgDelivery.Load())
	if avg == 0 {
		if first := p.firstStart.Load(); first != 0 {
			avg = time.Since(time.Unix(0, first))
		}
	}
	// Half the drain time: a message that comes back while the pool is
	// still full goes back again with a fresh estimate, while one that
	// comes back late leaves a slot idle.
	d := time.Duration(int64(avg) * int64(held) / int64(max(p.def.Concurrency, 1)) / 2)
	if p.limiter != nil {
		// At most RatePerSecond starts a second: the held ones need that long.
		d = max(d, time.Duration(float64(held)/float64(p.limiter.Limit())*float64(time.Second)))
	}
	return min(max(d, lo), hi)
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

// Unhold undoes one successful TryHold, and wakes one caller of WaitRoom.
func (p *Pool) Unhold() {
	p.held.Add(-1)
	if p.waiting.Load() > 0 {
		select {
		case p.room <- struct{}{}:
		default:
		}
	}
}

// WaitRoom waits until a delivery of the pool ends its hold (each Unhold
// wakes one waiter), for at most limit, or until ctx ends.
func (p *Pool) WaitRoom(ctx context.Context, limit time.Duration) {
	p.waiting.Add(1)
	defer p.waiting.Add(-1)
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-p.room:
	case <-t.C:
	case <-ctx.Done():
	}
}

// Held is how many deliveries run in or wait for the pool now.
func (p *Pool) Held() int { return int(p.held.Load()) }

func newPool(def pool.Pool) *Pool {
	p := &Pool{def: def, slots: make(chan struct{}, max(def.Concurrency, 1)), room: make(chan struct{}, 1)}
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
		if p.firstStart.Load() == 0 {
			p.firstStart.CompareAndSwap(0, time.Now().UnixNano())
		}
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

// Release frees the slot taken by Acquire; took is how long the delivery
// held it (for DrainEstimate).
func (p *Pool) Release(took time.Duration) {
	p.observe(took)
	<-p.slots
}

// InFlight is how many deliveries hold a slot now.
func (p *Pool) InFlight() int { return len(p.slots) }

// Definition is the pool's stored definition.
func (p *Pool) Definition() pool.Pool { return p.def }

// PoolLookup reads pool definitions.
type PoolLookup interface {
	PoolGetByID(ctx context.Context, id string) (*pool.Pool, error)
	PoolGetByCode(ctx context.Context, code string) (*pool.Pool, error)
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
	var def *pool.Pool
	var err error
	if id == "" {
		def, err = ps.store.PoolGetByCode(ctx, pool.DefaultPoolCode)
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
	if def.Code == pool.DefaultPoolCode {
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

// poolAdmission admits a delivery into pool within the router's share of
// it (dispatch.Admitter): the gated claim asks after the order gate and
// gives the room back when the job is not claimed.
type poolAdmission struct {
	pool  *Pool
	share int
}

// TryAdmit holds room in the pool when it holds fewer than its share.
func (a *poolAdmission) TryAdmit() bool { return a.pool.TryHold(a.share) }

// Unadmit gives the room back.
func (a *poolAdmission) Unadmit() { a.pool.Unhold() }
