package subscription

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/ristretto/v2"

	"github.com/hooklane/hooklane/event/cloudevent"
)

// RefreshIntervalDefault is how often a Cache asks the store for its
// subscription generation when CacheConfig.RefreshInterval is zero: the bound
// on how long a change made by another instance takes to apply here.
const RefreshIntervalDefault = time.Second

// Sizing of the per-event-type candidate lists. A list costs one unit per
// candidate binding plus one, so the cache holds at most that many bindings
// (24 bytes each) whatever the number of event types.
const (
	candidateMaxCost = 1 << 18
	// candidateCounters is ten times the number of distinct event types we
	// expect to see, as ristretto recommends.
	candidateCounters = 100_000
	candidateBuffer   = 64
)

// CacheStore is the part of the subscription store the cache reads.
type CacheStore interface {
	// SubscriptionListAll returns every subscription.
	SubscriptionListAll(ctx context.Context) ([]*Subscription, error)
	// SubscriptionGeneration returns a number that grows on every change
	// to any subscription.
	SubscriptionGeneration(ctx context.Context) (int64, error)
	// SubscriptionGetByID returns one subscription (store.ErrNotFound when
	// there is none).
	SubscriptionGetByID(ctx context.Context, id string) (*Subscription, error)
}

// CacheConfig configures a Cache.
type CacheConfig struct {
	// Store is read to build the index. Required.
	Store CacheStore
	// RefreshInterval is how often Run checks the store's generation to
	// pick up changes made by other instances. Default 1s.
	RefreshInterval time.Duration
	// Logger receives rebuild failures and subscriptions that cannot match.
	// Default: discard.
	Logger *slog.Logger
	// NowFunc is the clock, for CacheStats.BuiltAt. Default time.Now.
	NowFunc func() time.Time
}

// CacheStats are counters for metrics.
type CacheStats struct {
	// Hits and Misses count lookups of an event type's candidate list.
	Hits, Misses uint64
	// Rebuilds counts index builds from the store.
	Rebuilds uint64
	// Subscriptions is the size of the current index.
	Subscriptions int
	// StoreGeneration is the store generation the current index was built at.
	StoreGeneration int64
	// BuiltAt is when the current index was built; zero before the first.
	BuiltAt time.Time
}

// Cache is the subscription index kept in step with the store, with the
// candidate list of each event type cached (ristretto) in front of it.
//
// Freshness: after Invalidate returns, the next Match (or Index) on this
// instance rebuilds from the store, so a change stored before Invalidate is
// never missed. Changes made by other instances apply when Run sees the
// store's generation grow, within RefreshInterval. A stale build can never
// replace a newer one: builds are serialised and each records the
// invalidations and store generation it started from.
//
// A Cache is safe for concurrent use. Close releases the ristretto cache.
type Cache struct {
	store    CacheStore
	interval time.Duration
	logger   *slog.Logger
	now      func() time.Time

	cur atomic.Pointer[snapshot]
	// wanted counts Invalidate calls; a snapshot whose basis is below it
	// is stale.
	wanted atomic.Uint64
	// buildMu serialises builds.
	buildMu sync.Mutex

	// listsMu guards lists against Clear and Close, which ristretto does
	// not allow concurrently with Get and Set. Lock order: buildMu, then
	// listsMu.
	listsMu sync.RWMutex
	lists   *ristretto.Cache[string, *candidateList]

	hits, misses, rebuilds atomic.Uint64

	// afterRefreshFunc, when set (by tests), runs after each Run poll.
	afterRefreshFunc func()
}

// snapshot is one build of the index.
type snapshot struct {
	index    *Index
	build    uint64
	basis    uint64
	storeGen int64
	builtAt  time.Time
}

// candidateList is a cached candidate list, valid only for its build.
type candidateList struct {
	build uint64
	refs  []ref
}

// NewCache returns a cache over cfg.Store. It builds nothing until the first
// Match, Index or Run poll. It panics when cfg.Store is nil (a programmer
// error).
func NewCache(cfg CacheConfig) *Cache {
	if cfg.Store == nil {
		panic("subscription: NewCache needs a Store")
	}
	lists, err := ristretto.NewCache(&ristretto.Config[string, *candidateList]{
		NumCounters:        candidateCounters,
		MaxCost:            candidateMaxCost,
		BufferItems:        candidateBuffer,
		IgnoreInternalCost: true,
	})
	if err != nil {
		// Only an invalid constant configuration makes ristretto fail.
		panic(fmt.Sprintf("subscription: create candidate cache: %v", err))
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	now := cfg.NowFunc
	if now == nil {
		now = time.Now
	}
	return &Cache{
		store:    cfg.Store,
		interval: cmp.Or(cfg.RefreshInterval, RefreshIntervalDefault),
		logger:   logger.With("component", "subscription_cache"),
		now:      now,
		lists:    lists,
	}
}

// Match returns the ACTIVE subscriptions that ev matches, as
// [Index.Match] does, from an index that reflects every change made before
// the last Invalidate. It fails only when the index must be rebuilt and the
// store cannot be read.
func (c *Cache) Match(ctx context.Context, ev *cloudevent.Event, resolvedVersion string) ([]*Subscription, error) {
	snap, err := c.current(ctx)
	if err != nil {
		return nil, err
	}
	return matchRefs(c.candidates(snap, EventClient(ev), ev.Type), ev, resolvedVersion), nil
}

// Index returns the current index, rebuilt first when Invalidate was
// called since the last build. Use it for BindsEventType and ByID.
func (c *Cache) Index(ctx context.Context) (*Index, error) {
	snap, err := c.current(ctx)
	if err != nil {
		return nil, err
	}
	return snap.index, nil
}

// Get returns the subscription with id as the current index holds it — on
// the delivery path, without a store read — or, when the index does not
// hold it (created on another instance since the last refresh, or deleted),
// as the store holds it. The result reflects every change made on this
// instance before the last Invalidate and, for changes made on other
// instances, is at most RefreshInterval old (while Run runs). It is shared:
// callers must not modify it.
func (c *Cache) Get(ctx context.Context, id string) (*Subscription, error) {
	snap, err := c.current(ctx)
	if err != nil {
		return nil, err
	}
	if sub, ok := snap.index.ByID(id); ok {
		return sub, nil
	}
	sub, err := c.store.SubscriptionGetByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("get subscription %s: %w", id, err)
	}
	return sub, nil
}

// BindsEventType reports, as [Index.BindsEventType] does, whether any
// subscription binds code exactly or by a pattern, from an index that
// reflects every change made before the last Invalidate. It is the
// schema catalog's check before deleting an event type.
func (c *Cache) BindsEventType(ctx context.Context, code string) (bool, error) {
	ix, err := c.Index(ctx)
	if err != nil {
		return false, err
	}
	return ix.BindsEventType(code), nil
}

// PoolUser returns the code of a subscription that delivers through the
// dispatch pool poolID, or "" when none does: the pool service's check
// before deleting a pool.
func (c *Cache) PoolUser(ctx context.Context, poolID string) (string, error) {
	ix, err := c.Index(ctx)
	if err != nil {
		return "", err
	}
	for _, sub := range ix.Subscriptions() {
		if sub.DispatchPoolID != nil && *sub.DispatchPoolID == poolID {
			return sub.Code, nil
		}
	}
	return "", nil
}

// Invalidate makes the next Match or Index rebuild from the store. Call it
// after storing a change to a subscription.
func (c *Cache) Invalidate() { c.wanted.Add(1) }

// Run polls the store's generation every RefreshInterval and rebuilds the
// index when it grew, until ctx ends; it then returns nil. A failed poll is
// logged and retried at the next tick; the current index stays in use.
func (c *Cache) Run(ctx context.Context) error {
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		if err := c.runOnce(ctx); err != nil && ctx.Err() == nil {
			c.logger.WarnContext(ctx, "refresh subscription index", "error", err)
		}
		if c.afterRefreshFunc != nil {
			c.afterRefreshFunc()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// runOnce rebuilds the index when the store's generation is newer than the
// one the current index was built at.
func (c *Cache) runOnce(ctx context.Context) error {
	gen, err := c.store.SubscriptionGeneration(ctx)
	if err != nil {
		return fmt.Errorf("read subscription generation: %w", err)
	}
	// Generations only grow, so an index built at gen or later is as new as
	// what we saw (another build may have happened meanwhile).
	_, err = c.refresh(ctx, func(s *snapshot) bool { return s.storeGen < gen })
	return err
}

// current returns a snapshot no older than the last Invalidate.
func (c *Cache) current(ctx context.Context) (*snapshot, error) {
	if s := c.cur.Load(); s != nil && s.basis >= c.wanted.Load() {
		return s, nil
	}
	return c.refresh(ctx, func(*snapshot) bool { return false })
}

// refresh builds a new snapshot unless the current one is fresh: built
// after every Invalidate so far and not stale by the caller's test.
func (c *Cache) refresh(ctx context.Context, stale func(*snapshot) bool) (*snapshot, error) {
	c.buildMu.Lock()
	defer c.buildMu.Unlock()
	// Read the invalidation count before reading the store: any
	// Invalidate counted here followed its change, which the reads below
	// therefore see.
	wanted := c.wanted.Load()
	old := c.cur.Load()
	if old != nil && old.basis >= wanted && !stale(old) {
		return old, nil
	}
	gen, err := c.store.SubscriptionGeneration(ctx)
	if err != nil {
		return nil, fmt.Errorf("read subscription generation: %w", err)
	}
	subs, err := c.store.SubscriptionListAll(ctx)
	if err != nil {
		return nil, fmt.Errorf("list subscriptions: %w", err)
	}
	ix := NewIndex(subs)
	for _, e := range ix.Errors() {
		c.logger.WarnContext(ctx, "subscription cannot match", "error", e)
	}
	s := &snapshot{index: ix, basis: wanted, storeGen: gen, builtAt: c.now()}
	if old != nil {
		s.build = old.build + 1
	}
	c.cur.Store(s)
	c.rebuilds.Add(1)
	// Lists of older builds are never served (they carry their build);
	// clearing frees them.
	c.listsMu.Lock()
	c.lists.Clear()
	c.listsMu.Unlock()
	c.logger.DebugContext(ctx, "subscription index built",
		"subscriptions", ix.Len(), "store_generation", gen)
	return s, nil
}

// candidates returns the matching candidate bindings of code for an event
// of clientID ("" for none) in snap,
// from the ristretto cache when it holds them for this build.
func (c *Cache) candidates(snap *snapshot, clientID, code string) []ref {
	// A client id never holds a NUL, so the key is unambiguous.
	key := code
	if clientID != "" {
		key = clientID + "\x00" + code
	}
	c.listsMu.RLock()
	defer c.listsMu.RUnlock()
	if l, ok := c.lists.Get(key); ok && l.build == snap.build {
		c.hits.Add(1)
		return l.refs
	}
	c.misses.Add(1)
	refs := snap.index.matchingCandidates(clientID, code)
	c.lists.Set(key, &candidateList{build: snap.build, refs: refs}, int64(len(refs))+1)
	return refs
}

// Stats returns the cache's counters.
func (c *Cache) Stats() CacheStats {
	st := CacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Rebuilds: c.rebuilds.Load()}
	if s := c.cur.Load(); s != nil {
		st.Subscriptions = s.index.Len()
		st.StoreGeneration = s.storeGen
		st.BuiltAt = s.builtAt
	}
	return st
}

// Close stops the ristretto cache's goroutines. Match keeps working after
// Close, without caching candidate lists.
func (c *Cache) Close() {
	c.listsMu.Lock()
	defer c.listsMu.Unlock()
	c.lists.Close()
}
