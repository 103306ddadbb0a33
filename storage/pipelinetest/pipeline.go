// Package pipelinetest assembles the embedded gateway's parts for the tests
// of the packages above them: a SQLite store in a temporary directory, the
// in-process queue, the schema registry, the subscription cache, the
// job lifecycle and the ingest service, wired as cmd/hooklane wires them. No part
// is a mock. Everything it opens is closed in tb.Cleanup.
package pipelinetest

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/dispatch/pool"
	"github.com/hooklane/hooklane/event/schema"
	"github.com/hooklane/hooklane/ingest"
	"github.com/hooklane/hooklane/ingest/task"
	"github.com/hooklane/hooklane/queue/memqueue"
	"github.com/hooklane/hooklane/router/webhook"
	"github.com/hooklane/hooklane/storage/sqlitestore"
	"github.com/hooklane/hooklane/subscription"
	"github.com/hooklane/hooklane/subscription/replay"
	"github.com/hooklane/hooklane/tenant"
)

// Config tunes a Pipeline. The zero value is the default.
type Config struct {
	// NowFunc is the clock of the ids, the enqueuer and the ingest service;
	// nil is time.Now.
	NowFunc func() time.Time
	// DefaultPool creates the default dispatch pool, as the gateway does at
	// start.
	DefaultPool bool
	// Circuit is the lifecycle's circuit policy; its Store is always the
	// pipeline's store (the zero value: circuits kept but never opened, no
	// auto-disable).
	Circuit dispatch.CircuitPolicy
}

// Pipeline is the assembled parts.
type Pipeline struct {
	Store    *sqlitestore.Store
	Queue    *memqueue.Queue
	IDs      *idgen.Generator
	Registry *schema.Registry
	Subs     *subscription.Cache
	// Jobs is the job lifecycle every part moves jobs through.
	Jobs   *dispatch.Lifecycle
	Ingest *ingest.Service
}

// New assembles a pipeline for tb.
func New(tb testing.TB, cfg Config) *Pipeline {
	tb.Helper()
	now := cfg.NowFunc
	if now == nil {
		now = time.Now
	}
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, sqlitestore.Config{Path: filepath.Join(tb.TempDir(), "hooklane.db")})
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, st.Close()) })
	q := memqueue.New(memqueue.Config{})
	tb.Cleanup(func() { require.NoError(tb, q.Close()) })
	ids := idgen.New(now)
	if cfg.DefaultPool {
		at := now().UTC().Truncate(time.Millisecond)
		require.NoError(tb, st.PoolInsert(ctx, &pool.Pool{
			ID: ids.New(), Code: pool.DefaultPoolCode, Name: "Default pool", Burst: 1,
			Concurrency: pool.DefaultPoolConcurrency, CreatedAt: at, UpdatedAt: at,
		}))
	}
	subs := subscription.NewCache(subscription.CacheConfig{Store: st})
	tb.Cleanup(subs.Close)
	registry := schema.NewRegistry(schema.RegistryConfig{Store: st})
	circuit := cfg.Circuit
	circuit.Store = st
	jobs := dispatch.NewLifecycle(dispatch.LifecycleConfig{Store: st, Queue: q, NewID: ids.New, NowFunc: now, Circuit: circuit})
	svc := ingest.New(ingest.Config{Store: st, Validator: registry, Matcher: subs, Jobs: jobs, IDs: ids, NowFunc: now})
	return &Pipeline{Store: st, Queue: q, IDs: ids, Registry: registry, Subs: subs, Jobs: jobs, Ingest: svc}
}

// ServicesConfig tunes the domain services of Pipeline.Services. The zero
// value checks target addresses and invalidates the pipeline's registry.
type ServicesConfig struct {
	// AllowPrivateTargets skips the subscriptions' target address check.
	AllowPrivateTargets bool
	// PoolChangedFunc is the pool service's change hook; nil is none.
	PoolChangedFunc func(id string)
	// RegistryInvalidateFunc is called after an event type changed; nil
	// invalidates the pipeline's registry.
	RegistryInvalidateFunc func()
	// NowFunc is the services' clock; nil is time.Now.
	NowFunc func() time.Time
	// Replays reads replays for the owner lookups; nil: none.
	Replays *replay.Service
}

// Services are the domain services behind the API, built as cmd/hooklane
// builds them, field for field api.Services (the API's tests convert one
// into the other).
type Services struct {
	EventTypes    *schema.Catalog
	Subscriptions *subscription.Service
	Pools         *pool.Service
	Tasks         *task.Service
	Clients       *tenant.Service
	Owners        *tenant.Owners
}

// Services builds the domain services over the pipeline's store, job
// lifecycle and subscription cache.
func (p *Pipeline) Services(cfg *ServicesConfig) *Services {
	invalidate := cfg.RegistryInvalidateFunc
	if invalidate == nil {
		invalidate = p.Registry.Invalidate
	}
	sc := subscription.ServiceConfig{
		Store: p.Store, Jobs: p.Jobs, NewIDFunc: p.IDs.New, OnChangeFunc: p.Subs.Invalidate, NowFunc: cfg.NowFunc,
	}
	if !cfg.AllowPrivateTargets {
		sc.PublicHostFunc = webhook.PublicHostFunc(net.DefaultResolver)
	}
	subs := subscription.NewService(sc)
	owners := tenant.OwnersConfig{Events: p.Store, Jobs: p.Store, Subscriptions: p.Subs}
	if cfg.Replays != nil {
		owners.Replays = cfg.Replays
	}
	return &Services{
		EventTypes: schema.NewCatalog(schema.CatalogConfig{
			Store: p.Store, Bindings: p.Subs, ValidateCodeFunc: ingest.ValidateEventTypeCode,
			OnChangeFunc: invalidate, NowFunc: cfg.NowFunc,
		}),
		Subscriptions: subs,
		Pools: pool.NewService(pool.Config{
			Store: p.Store, NewIDFunc: p.IDs.New, OnChangeFunc: cfg.PoolChangedFunc, UsedByFunc: p.Subs.PoolUser,
			NowFunc: cfg.NowFunc,
		}),
		Tasks: task.NewService(task.Config{Checker: subs, Jobs: p.Jobs, NewIDFunc: p.IDs.New, NowFunc: cfg.NowFunc}),
		Clients: tenant.NewService(tenant.ServiceConfig{
			Store: p.Store, Subscriptions: subs, Jobs: p.Jobs, NewIDFunc: p.IDs.New, NowFunc: cfg.NowFunc,
		}),
		Owners: tenant.NewOwners(owners),
	}
}
