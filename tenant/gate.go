package tenant

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/subscription"
)

// Getter reads one client (the store).
type Getter interface {
	ClientGetByID(ctx context.Context, id string) (*Client, error)
}

// SubscriptionGetter reads one subscription (the subscription cache, or the
// store).
type SubscriptionGetter interface {
	Get(ctx context.Context, id string) (*subscription.Subscription, error)
}

// SubscriptionStoreGetter reads one subscription from the store.
type SubscriptionStoreGetter interface {
	SubscriptionGetByID(ctx context.Context, id string) (*subscription.Subscription, error)
}

// Gate shows the delivery path a suspended client's subscriptions as
// PAUSED, so the router parks their jobs PENDING (dispatch.Lifecycle's
// ParkPaused) instead of delivering them; reactivating the client releases
// them (Service.Patch). The client's status is read from the store at most
// once per TTL per client on the delivery path (so a suspension holds on
// every instance within it) and always before a job is parked (so a
// reactivation is never missed). Anchor-level subscriptions cost nothing
// extra.
type Gate struct {
	Clients Getter
	// TTL is how long the hot path (GatedSubscriptions.Get, the router's
	// read of every job's subscription) trusts a client's status it read:
	// a suspension holds deliveries on every instance within it. The
	// confirmation read before a park (SubscriptionGetByID) always reads
	// the store, so a reactivation is never missed. Default GateTTLDefault;
	// negative reads the client on every job.
	TTL time.Duration
	// NowFunc is the clock. Default time.Now.
	NowFunc func() time.Time

	mu   sync.Mutex
	seen map[string]seenClient
}

// GateTTLDefault is Gate.TTL's default.
const GateTTLDefault = time.Second

// gateSeenMax bounds the clients whose status one Gate remembers.
const gateSeenMax = 50_000

type seenClient struct {
	suspended bool
	at        time.Time
}

// cachedSuspended returns sub as PAUSED when its client is suspended or
// gone, trusting a status read within the TTL.
func (g *Gate) cachedSuspended(ctx context.Context, sub *subscription.Subscription) (*subscription.Subscription, error) {
	if sub.ClientID == nil || sub.Status != subscription.StatusActive || g.TTL < 0 {
		return g.suspended(ctx, sub)
	}
	now := g.now()
	ttl := cmp.Or(g.TTL, GateTTLDefault)
	g.mu.Lock()
	s, ok := g.seen[*sub.ClientID]
	g.mu.Unlock()
	if ok && now.Sub(s.at) < ttl && !now.Before(s.at) {
		if s.suspended {
			return paused(sub), nil
		}
		return sub, nil
	}
	out, err := g.suspended(ctx, sub)
	if err != nil {
		return nil, err
	}
	g.remember(sub, out, now, ttl)
	return out, nil
}

// remember records what sub's client read as (out), at now.
func (g *Gate) remember(sub, out *subscription.Subscription, now time.Time, ttl time.Duration) {
	if sub.ClientID == nil || sub.Status != subscription.StatusActive || g.TTL < 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.seen == nil {
		g.seen = make(map[string]seenClient)
	}
	if len(g.seen) >= gateSeenMax {
		for id, e := range g.seen {
			if now.Sub(e.at) >= ttl {
				delete(g.seen, id)
			}
		}
	}
	if len(g.seen) < gateSeenMax {
		g.seen[*sub.ClientID] = seenClient{suspended: out.Status == subscription.StatusPaused, at: now}
	}
}

func (g *Gate) now() time.Time {
	if g.NowFunc != nil {
		return g.NowFunc()
	}
	return time.Now()
}

// suspended returns sub as PAUSED (a copy) when its client is suspended or
// gone, else sub itself.
func (g *Gate) suspended(ctx context.Context, sub *subscription.Subscription) (*subscription.Subscription, error) {
	if sub.ClientID == nil || sub.Status != subscription.StatusActive {
		return sub, nil
	}
	c, err := g.Clients.ClientGetByID(ctx, *sub.ClientID)
	if errors.Is(err, store.ErrNotFound) {
		// The client is being deleted: its subscriptions go next, and their
		// jobs are cancelled then. Hold the job meanwhile.
		return paused(sub), nil
	}
	if err != nil {
		return nil, fmt.Errorf("get client %s of subscription %s: %w", *sub.ClientID, sub.ID, err)
	}
	if c.Status == StatusSuspended {
		return paused(sub), nil
	}
	return sub, nil
}

func paused(sub *subscription.Subscription) *subscription.Subscription {
	c := *sub
	c.Status = subscription.StatusPaused
	return &c
}

// Subscriptions wraps the router's subscription source.
func (g *Gate) Subscriptions(next SubscriptionGetter) GatedSubscriptions {
	return GatedSubscriptions{g: g, next: next}
}

// GatedSubscriptions is a subscription source whose subscriptions of a
// suspended client read as PAUSED.
type GatedSubscriptions struct {
	g    *Gate
	next SubscriptionGetter
}

// Get returns the subscription, PAUSED while its client is suspended.
func (s GatedSubscriptions) Get(ctx context.Context, id string) (*subscription.Subscription, error) {
	sub, err := s.next.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.g.cachedSuspended(ctx, sub)
}

// SubscriptionGetByID reads a subscription from next, shown PAUSED while
// its client is suspended: the router's confirmation read before it parks.
func (g *Gate) SubscriptionGetByID(ctx context.Context, next SubscriptionStoreGetter, id string) (*subscription.Subscription, error) {
	sub, err := next.SubscriptionGetByID(ctx, id)
	if err != nil {
		return nil, err
	}
	out, err := g.suspended(ctx, sub)
	if err != nil {
		return nil, err
	}
	g.remember(sub, out, g.now(), cmp.Or(g.TTL, GateTTLDefault))
	return out, nil
}
