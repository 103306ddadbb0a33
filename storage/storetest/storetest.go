// Package storetest is the conformance suite every storage adapter passes.
// An adapter's test calls [Run] with a function that returns a fresh, empty
// store in its own namespace (a new SQLite file, a new Mongo database), so
// every subtest can run in parallel.
package storetest

import (
	"context"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/health"
	"github.com/hooklane/hooklane/dispatch/pool"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/schema"
	"github.com/hooklane/hooklane/storage/secretbox"
	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription"
	"github.com/hooklane/hooklane/subscription/replay"
	"github.com/hooklane/hooklane/tenant"
)

// Store is every storage port together: what an adapter implements.
//
//nolint:interfacebloat // the composition of every domain's small port (STYLE §4) is the point: it is what an adapter must satisfy
type Store interface {
	event.Store
	dispatch.Store
	pool.Store
	dispatch.CircuitStore
	health.Store
	subscription.Store
	schema.Store
	stream.Store
	tenant.Store
	replay.Store
	// SecretSealAll checks every stored secret against the store's
	// secretbox.Box and seals those in plain text; see RunSealed.
	SecretSealAll(ctx context.Context) (secretbox.Census, error)
	// Ping reports whether the database is reachable.
	Ping(ctx context.Context) error
	// Close releases the store's resources.
	Close() error
}
