package main

import (
	"context"

	"github.com/hooklane/hooklane/router"
	"github.com/hooklane/hooklane/router/pull"
	"github.com/hooklane/hooklane/subscription"
	"github.com/hooklane/hooklane/tenant"
)

// clientGatedStore is the router's store with a suspended client's
// subscriptions read as PAUSED (client.Gate), so the router parks their
// jobs instead of delivering them; reactivating the client releases them.
type clientGatedStore struct {
	router.Store
	gate *tenant.Gate
}

// SubscriptionGetByID reads a subscription, PAUSED while its client is
// suspended.
func (s clientGatedStore) SubscriptionGetByID(ctx context.Context, id string) (*subscription.Subscription, error) {
	return s.gate.SubscriptionGetByID(ctx, s.Store, id)
}

// clientGate wraps the router's store and subscription source with the
// suspension gate of API.md §11.
func clientGate(st interface {
	router.Store
	tenant.Getter
}, subs router.Subscriptions,
) (clientGatedStore, tenant.GatedSubscriptions) {
	g := &tenant.Gate{Clients: st}
	return clientGatedStore{Store: st, gate: g}, g.Subscriptions(subs)
}

// pullGatedStore is pull delivery's store with a suspended client's
// subscriptions read as PAUSED, so their pull jobs wait as push ones do.
type pullGatedStore struct {
	pull.Store
	gate *tenant.Gate
}

// SubscriptionGetByID reads a subscription, PAUSED while its client is
// suspended.
func (s pullGatedStore) SubscriptionGetByID(ctx context.Context, id string) (*subscription.Subscription, error) {
	return s.gate.SubscriptionGetByID(ctx, s.Store, id)
}

// pullClientGate wraps pull delivery's store with the suspension gate.
func pullClientGate(st interface {
	pull.Store
	tenant.Getter
},
) pullGatedStore {
	return pullGatedStore{Store: st, gate: &tenant.Gate{Clients: st, TTL: -1}}
}
