package main

import (
	"log/slog"
	"net"

	"github.com/hooklane/hooklane/api"
	"github.com/hooklane/hooklane/destination"
	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/dispatch/pool"
	"github.com/hooklane/hooklane/event/schema"
	"github.com/hooklane/hooklane/ingest"
	"github.com/hooklane/hooklane/ingest/task"
	"github.com/hooklane/hooklane/router/webhook"
	"github.com/hooklane/hooklane/subscription"
	"github.com/hooklane/hooklane/subscription/replay"
	"github.com/hooklane/hooklane/tenant"
)

// servicesConfig is what the domain services behind the API are built
// from.
type servicesConfig struct {
	Store Store
	Jobs  *dispatch.Lifecycle
	IDs   *idgen.Generator
	// Subscriptions is the matching cache: invalidated on subscription
	// writes, read for the checks before an event type or a pool is
	// deleted.
	Subscriptions *subscription.Cache
	// Registry is the schema registry, invalidated on event type writes.
	Registry *schema.Registry
	// PoolChangedFunc is called with a pool id after it changed.
	PoolChangedFunc func(id string)
	// Replays reads replays for the client scope's owner lookups.
	Replays *replay.Service
	// AllowPrivateTargets skips the target address check
	// (HOOKLANE_ALLOW_PRIVATE_TARGETS).
	AllowPrivateTargets bool
	// Destinations are the message-broker types subscriptions may deliver
	// to (API.md §15); their broker addresses pass the target check.
	Destinations *destination.Registry
	Logger       *slog.Logger
}

// newServices builds the domain services the API's handlers call.
func newServices(c *servicesConfig) api.Services {
	sc := subscription.ServiceConfig{
		Store: c.Store, Jobs: c.Jobs, NewIDFunc: c.IDs.New, Logger: c.Logger,
		OnChangeFunc: c.Subscriptions.Invalidate, Destinations: c.Destinations,
	}
	if !c.AllowPrivateTargets {
		sc.PublicHostFunc = webhook.PublicHostFunc(net.DefaultResolver)
	}
	subs := subscription.NewService(sc)
	return api.Services{
		EventTypes: schema.NewCatalog(schema.CatalogConfig{
			Store: c.Store, Bindings: c.Subscriptions, ValidateCodeFunc: ingest.ValidateEventTypeCode,
			OnChangeFunc: c.Registry.Invalidate,
		}),
		Subscriptions: subs,
		Pools: pool.NewService(pool.Config{
			Store: c.Store, NewIDFunc: c.IDs.New, OnChangeFunc: c.PoolChangedFunc, UsedByFunc: c.Subscriptions.PoolUser,
		}),
		Tasks: task.NewService(task.Config{Checker: subs, Jobs: c.Jobs, NewIDFunc: c.IDs.New}),
		Clients: tenant.NewService(tenant.ServiceConfig{
			Store: c.Store, Subscriptions: subs, Jobs: c.Jobs, NewIDFunc: c.IDs.New, Logger: c.Logger,
		}),
		Owners: tenant.NewOwners(tenant.OwnersConfig{
			Events: c.Store, Jobs: c.Store, Subscriptions: c.Subscriptions, Replays: c.Replays,
		}),
	}
}
