package client

import (
	"context"
	"errors"
	"fmt"

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
// them (Service.Patch). The client is read from the store for each job of a
// client's subscription, so a suspension holds at once on every instance.
// Anchor-level subscriptions cost nothing extra.
type Gate struct {
	Clients Getter
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
	return s.g.suspended(ctx, sub)
}

// SubscriptionGetByID reads a subscription from next, shown PAUSED while
// its client is suspended: the router's confirmation read before it parks.
func (g *Gate) SubscriptionGetByID(ctx context.Context, next SubscriptionStoreGetter, id string) (*subscription.Subscription, error) {
	sub, err := next.SubscriptionGetByID(ctx, id)
	if err != nil {
		return nil, err
	}
	return g.suspended(ctx, sub)
}
