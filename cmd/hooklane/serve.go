package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/hooklane/hooklane/api"
	"github.com/hooklane/hooklane/api/ui"
	"github.com/hooklane/hooklane/destination/endpoint"
	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/dispatch/health"
	"github.com/hooklane/hooklane/dispatch/idgen"
	"github.com/hooklane/hooklane/dispatch/pollers"
	"github.com/hooklane/hooklane/dispatch/pool"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/schema"
	"github.com/hooklane/hooklane/ingest"
	"github.com/hooklane/hooklane/ingest/operational"
	"github.com/hooklane/hooklane/queue"
	"github.com/hooklane/hooklane/queue/memqueue"
	"github.com/hooklane/hooklane/queue/sqsqueue"
	"github.com/hooklane/hooklane/router"
	"github.com/hooklane/hooklane/router/pull"
	"github.com/hooklane/hooklane/router/webhook"
	"github.com/hooklane/hooklane/storage/embedded"
	"github.com/hooklane/hooklane/storage/mongostore"
	"github.com/hooklane/hooklane/storage/secretbox"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription"
	"github.com/hooklane/hooklane/subscription/replay"
	"github.com/hooklane/hooklane/subscription/transform"
	"github.com/hooklane/hooklane/tenant"
)

// Store is every storage port: what the gateway runs on.
//
//nolint:interfacebloat // the composition of every domain's small port (STYLE §4): what an adapter must satisfy
type Store interface {
	event.Store
	dispatch.Store
	pool.Store
	dispatch.CircuitStore
	health.Store
	subscription.Store
	tenant.Store
	schema.Store
	stream.Store
	replay.Store
	Ping(ctx context.Context) error
	// SecretSealAll checks the stored secrets against the store's key and
	// seals those in plain text (prepareSecrets).
	SecretSealAll(ctx context.Context) (secretbox.Census, error)
	Close() error
}

// openStore opens MongoDB when configured, else the embedded store (the
// control plane in SQLite, the data plane in Pebble, both in the data
// dir; a data dir of an SQLite-only release is upgraded in place); box
// (nil: none) seals the secrets it stores.
func openStore(ctx context.Context, cfg *Config, box *secretbox.Box, logger *slog.Logger) (Store, error) { //nolint:ireturn // wiring: the configuration picks the adapter behind the port
	if cfg.MongoURI != "" {
		s, err := mongostore.Open(ctx, mongostore.Config{
			URI: cfg.MongoURI, Database: cfg.MongoDatabase, Logger: logger, Box: box,
			OnCommandFunc: cfg.roundTrips.counter("mongo"),
		})
		if err != nil {
			return nil, fmt.Errorf("open mongodb store: %w", err)
		}
		return s, nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	s, err := embedded.Open(ctx, embedded.Config{
		Dir: cfg.DataDir, Logger: logger, Box: box,
		Synchronous: strings.ToUpper(cfg.SQLiteSynchronous), CommitWindow: cfg.SQLiteCommitWindow,
	})
	if err != nil {
		return nil, fmt.Errorf("open embedded store: %w", err)
	}
	return s, nil
}

// embeddedDedupWindow is how long the in-process queue remembers a
// deduplication id.
const embeddedDedupWindow = time.Minute

// openQueue opens SQS FIFO when configured, else the in-process queue.
func openQueue(ctx context.Context, cfg *Config, logger *slog.Logger) (queue.Queue, bool, error) { //nolint:ireturn // wiring: the configuration picks the adapter behind the port
	if cfg.SQSQueueURL != "" {
		q, err := sqsqueue.New(ctx, sqsqueue.Config{
			QueueURL: cfg.SQSQueueURL, Endpoint: cfg.SQSEndpoint, Region: cfg.SQSRegion, Logger: logger,
			OnCallFunc: cfg.roundTrips.counter("sqs"),
		})
		if err != nil {
			return nil, false, fmt.Errorf("open sqs queue: %w", err)
		}
		// A queue that answers it is not FIFO is refused; one that does not
		// answer now (unreachable, missing) is left to /readyz.
		if _, err := q.Check(ctx); errors.Is(err, sqsqueue.ErrNotFIFO) {
			return nil, false, fmt.Errorf("open sqs queue: %w", err)
		} else if err != nil {
			logger.WarnContext(ctx, "could not check the sqs queue's attributes at start", "error", err)
		}
		// Concurrent ingest requests share SendMessageBatch calls and
		// concurrent deliveries share DeleteMessageBatch calls (up to ten
		// entries, after a 5 ms linger at most): a fraction of the API
		// calls, each a network round trip and a billed request.
		return queue.NewBatcher(q, queue.BatcherConfig{}), false, nil
	}
	// A minute of deduplication covers every re-send of one queuing the
	// gateway makes (a producer's retry after 5 s, a lost group head after
	// 10 s); a later repeat is dropped by the router's version check. The
	// queue's memory of ids is rate × window, and its messages die with the
	// process anyway: SQS's 5 minutes would only hold 5 × the memory
	// (~36 MB at 1,000 msg/s).
	return memqueue.New(memqueue.Config{VisibilityTimeout: cfg.Lease, DedupWindow: embeddedDedupWindow}), true, nil
}

func newLogger(cfg *Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	// Every line logged with a request's context carries its request_id,
	// and while tracing is on, with a span's context its trace_id and
	// span_id.
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	h = api.WithRequestID(h)
	if cfg.Tracing.Enabled {
		h = withTraceIDs(h)
	}
	return slog.New(h)
}

// ensureDefaultPool creates the default dispatch pool on first start.
func ensureDefaultPool(ctx context.Context, st Store, ids *idgen.Generator) error {
	if _, err := st.PoolGetByCode(ctx, pool.DefaultPoolCode); err == nil {
		return nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("get default pool: %w", err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	p := &pool.Pool{
		ID: ids.New(), Code: pool.DefaultPoolCode, Name: "Default pool", Burst: 1,
		Concurrency: pool.DefaultPoolConcurrency, CreatedAt: now, UpdatedAt: now,
	}
	if err := st.PoolInsert(ctx, p); err != nil && !errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("create default pool: %w", err)
	}
	return nil
}

func workerID() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// serve runs the configured roles until ctx ends. readyFunc, when set, is
// called with the bound HTTP address once the API (or, in a process
// without the api role, the operations endpoints) listens.
func serve(ctx context.Context, cfg *Config, logw io.Writer, readyFunc func(addr string)) (err error) {
	logger := newLogger(cfg, logw)
	tp, err := newTracerProvider(ctx, &cfg.Tracing)
	if err != nil {
		return err
	}
	if tp != nil {
		defer func() { err = errors.Join(err, shutdownTracing(tp, cfg.ShutdownTimeout)) }() //nolint:contextcheck // ctx has ended by then: the flush runs under its own timeout
		logger.InfoContext(ctx, "tracing on", "otlp_endpoint", cfg.Tracing.Endpoint)
	}
	// A nil provider is tracing off: the packages start no span.
	var tracer trace.TracerProvider
	if tp != nil {
		tracer = tp
	}
	roles := cfg.roles()
	keys := cfg.keys
	if keys == nil { // a Config not made by loadConfig
		var err error
		if keys, err = loadKeys(cfg.APIKeys, cfg.APIKeysFile); err != nil {
			return err
		}
	}
	proxies := cfg.trustedProxies
	if proxies == nil { // a Config not made by loadConfig
		var err error
		if proxies, err = parseTrustedProxies(cfg.TrustedProxies); err != nil {
			return fmt.Errorf("HOOKLANE_TRUSTED_PROXIES (--trusted-proxies): %w", err)
		}
	}
	box, err := cfg.secretBox()
	if err != nil {
		return err
	}
	st, err := openStore(ctx, cfg, box, logger)
	if err != nil {
		return err
	}
	defer func(st Store) { // this store, not the notifying wrapper st becomes below
		if err := st.Close(); err != nil {
			logger.ErrorContext(ctx, "close store", "error", err)
		}
	}(st)
	if err := prepareSecrets(ctx, st, box, logger); err != nil {
		return err
	}
	// The operational outbox (issue 32), when the store keeps one: circuit
	// transitions, auto-disables and job discards store their events with
	// their own write, and the relay below ingests them.
	outbox, durableEvents := st.(dispatch.OutboxStore)
	q, inProcess, err := openQueue(ctx, cfg, logger)
	if err != nil {
		return err
	}
	if c, ok := q.(io.Closer); ok {
		defer func() {
			if err := c.Close(); err != nil {
				logger.ErrorContext(ctx, "close queue", "error", err)
			}
		}()
	}
	// Every local write of status events wakes the stream tailer at once.
	hub := stream.NewHub(stream.HubConfig{Logger: logger})
	defer hub.Close()
	st = notifyingStore{Store: st, hub: hub}
	ids := idgen.New(nil)
	if err := ensureDefaultPool(ctx, st, ids); err != nil {
		return err
	}

	// The built-in event types of the operational events (API.md §12).
	if _, err := operational.Register(ctx, st, time.Now()); err != nil {
		return fmt.Errorf("register operational event types: %w", err)
	}

	subs := subscription.NewCache(subscription.CacheConfig{Store: st, Logger: logger})
	defer subs.Close()
	pools := router.NewPools(st)
	m := newMetrics(st, pools, subs, hub) //nolint:contextcheck // its pool-label hook runs where no ctx exists and bounds itself with poolLookupTimeout
	cm := m.Circuits(st.CircuitListNotClosed, nil)
	// mq counts send/receive errors; q itself stays the readiness Pinger.
	mq := m.InstrumentQueue(q)
	registry := schema.NewRegistry(schema.RegistryConfig{Store: st, AllowUnknownTypes: cfg.AllowUnknownTypes, Logger: logger})
	// Endpoint health (API.md §12): the aggregates of every attempt, and
	// the operational events, ingested like any other.
	recorder := health.NewRecorder(health.RecorderConfig{Store: st, Logger: logger})
	var svc *ingest.Service
	// With the outbox, every operational event (circuit, disable and
	// discarded-job ones) is stored with the write that causes it and
	// ingested by the relay; the in-memory Forwarder runs only for a store
	// without one.
	var forwarder *operational.Forwarder
	var relay *operational.Relay
	if durableEvents {
		relay = operational.NewRelay(operational.RelayConfig{
			Outbox: outbox,
			Ingest: ingestFunc(func(ctx context.Context, req *ingest.Request) ([]ingest.Result, error) {
				return svc.Gateway().Ingest(ctx, req)
			}),
			Subscriptions: st, Jobs: st, Logger: logger,
		})
	} else {
		forwarder = operational.NewForwarder(operational.ForwarderConfig{
			Ingest: ingestFunc(func(ctx context.Context, req *ingest.Request) ([]ingest.Result, error) {
				return svc.Gateway().Ingest(ctx, req)
			}),
			Subscriptions: st, Logger: logger, OnDropFunc: cm.ObserveOperationalDrop,
		})
	}
	// The job lifecycle: the one owner of every job write (package dispatch).
	jobs := dispatch.NewLifecycle(dispatch.LifecycleConfig{
		Store: st, Queue: mq, NewID: ids.New, Logger: logger, JSONMessages: cfg.jsonMessages(),
		Circuit: dispatch.CircuitPolicy{
			Store: st, Failures: cfg.CircuitFailures, Cooldown: cfg.CircuitCooldown, AutoDisableAfter: cfg.AutoDisableAfter,
			DurableEvents: durableEvents,
		},
		OnAttemptFunc: func(j *dispatch.Job, a dispatch.Attempt, err error) { recorder.Observe(observation(j, a, err)) },
		OnEventsFunc: func(j *dispatch.Job, events []stream.Event) {
			if forwarder != nil {
				forwarder.Observe(j, events)
			}
			if relay != nil {
				relay.Observe(j, events)
			}
		},
		OnCircuitFunc: cm.Observe,
	})
	svc = ingest.New(ingest.Config{
		Store: st, Validator: registry, Matcher: subs, Jobs: jobs, IDs: ids, Logger: logger, OnIngestFunc: m.ObserveIngest,
		TracerProvider: tracer,
	})
	rescuer := pollers.NewRescuer(pollers.RescuerConfig{
		Jobs: jobs, StaleQueuedAfter: cfg.StaleQueuedAfter, StaleInterval: staleCheckInterval(cfg), LeaseInterval: cfg.LeasePollInterval,
		BatchSize: cfg.PollerBatchSize, Logger: logger, OnRescueFunc: m.ObservePollerMoves,
	})
	if inProcess {
		// The in-process queue died with the previous process: what it held
		// is re-queued now, not after StaleQueuedAfter.
		if err := recoverEmbedded(ctx, rescuer, logger); err != nil {
			return err
		}
	}

	// Replays run on the instances with the pollers role; one started here
	// is taken at once when this instance runs them.
	var replays *replay.Worker
	replayCfg := replay.ServiceConfig{
		Store: st, Subscriptions: subscriptionReader{st}, IDs: ids, Retention: cfg.EventRetention, Logger: logger,
		MaxPerSubscription: cfg.MaxReplaysPerSubscription, MaxPerClient: cfg.MaxReplaysPerClient,
	}
	if roles["pollers"] {
		replays = replay.NewWorker(replay.WorkerConfig{
			Store: st, Subscriptions: subscriptionReader{st}, Jobs: jobs, IDs: ids, Owner: workerID(),
			Rate: float64(cfg.ReplayRate), BacklogMax: cfg.ReplayBacklog, Lease: cfg.ReplayLease, Logger: logger,
			OnPageFunc: m.NewReplay().ObservePage,
		})
		replayCfg.WakeFunc = replays.Wake
	}
	replaySvc := replay.NewService(replayCfg)

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return subs.Run(ctx) })
	g.Go(func() error { return recorder.Run(ctx) })
	if forwarder != nil {
		g.Go(func() error { return forwarder.Run(ctx) })
	}
	if relay != nil {
		g.Go(func() error { return relay.Run(ctx) })
	}
	if replays != nil {
		g.Go(func() error { return replays.Run(ctx) })
	}
	if roles["pollers"] {
		pending := pollers.NewPending(pollers.PendingConfig{
			Jobs: jobs, Interval: cfg.PendingPollInterval,
			BatchSize: cfg.PollerBatchSize, Logger: logger, OnQueueFunc: func(n int) { m.ObservePollerMoves("pending", n) },
		})
		fanout := pollers.NewFanOut(pollers.FanOutConfig{
			Store: st, FanOuter: svc, Interval: cfg.FanOutPollInterval, Grace: cfg.FanOutGrace,
			BatchSize: cfg.PollerBatchSize, Logger: logger, OnFanOutFunc: func(n int) { m.ObservePollerMoves("fanout", n) },
		})
		g.Go(func() error { return pending.Run(ctx) })
		g.Go(func() error { return rescuer.Run(ctx) })
		g.Go(func() error { return fanout.Run(ctx) })
		retention := pollers.NewRetention(pollers.RetentionConfig{
			Store: st, Retention: cfg.StreamRetention, Interval: cfg.RetentionPollInterval,
			BatchSize: cfg.PollerBatchSize, Logger: logger,
		})
		g.Go(func() error { return retention.Run(ctx) })
		cleanup := pollers.NewCleanup(pollers.CleanupConfig{
			Store: st, JobRetention: cfg.JobRetention, EventRetention: cfg.EventRetention,
			Interval: cfg.RetentionPollInterval, BatchSize: cfg.PollerBatchSize, Logger: logger,
			OnDeleteFunc: func(kind string, n int) { m.ObservePollerMoves("cleanup_"+kind, n) },
		})
		g.Go(func() error { return cleanup.Run(ctx) })
		healthRetention := pollers.NewHealthRetention(pollers.HealthRetentionConfig{
			Store: st, Interval: cfg.RetentionPollInterval, BatchSize: cfg.PollerBatchSize, Logger: logger,
		})
		g.Go(func() error { return healthRetention.Run(ctx) })
	}
	// One engine runs every transformation of this process (API.md §16):
	// deliveries and the API's test endpoint alike.
	transformer := transform.New(transform.Config{Timeout: cfg.TransformTimeout, MaxResultBytes: cfg.MaxEventBytes})
	transformMetrics := m.NewTransform()
	destinations := newDestinationRegistry() // destinations.go
	if roles["router"] {
		// Webhooks and destinations run transformations alike, on the one
		// engine, into the same metrics.
		onTransform := func(r webhook.TransformRun) {
			transformMetrics.ObserveRun(r.Failure, r.Cancelled, r.Duration)
		}
		hooks := webhook.New(webhook.Config{
			AllowPrivateTargets: cfg.AllowPrivateTargets, UserAgent: "hooklane/" + version,
			Transform: transformer, OnTransformFunc: onTransform,
		})
		defer hooks.Close()
		transports := router.Transports{"http": hooks, "https": hooks}
		brokers := newBrokerTransport(destinations, cfg.AllowPrivateTargets, logger, transformer, onTransform)
		brokers.register(transports)
		defer brokers.close()
		g.Go(func() error { return brokers.run(ctx) })
		rstore, rsubs := clientGate(st, subs)
		rt := router.New(router.Config{
			Queue: mq, Store: rstore, Subscriptions: rsubs, Lifecycle: jobs, Pools: pools, Transport: transports, WorkerID: workerID(),
			Lease: cfg.Lease, MaxInFlight: cfg.RouterConcurrency, Logger: logger, OnAttemptFunc: m.ObserveAttempt,
			ReceiveVisibility: cfg.ReceiveVisibility, ShutdownDrain: cfg.ShutdownDrain,
			TracerProvider: tracer,
		})
		g.Go(func() error { return rt.Run(ctx) })
	}
	if cfg.MetricsListen != "" {
		// Metrics on their own listener, whatever the roles: a router-only
		// process is scraped too.
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", m.Handler())
		addr, err := listenAndServe(ctx, g, cfg.MetricsListen, cfg.ShutdownTimeout, mux, logger)
		if err != nil {
			return err
		}
		logger.InfoContext(ctx, "metrics listener started", "metrics_listen", addr)
	}
	if roles["api"] {
		tailer := stream.NewTailer(stream.TailerConfig{Store: st, Hub: hub, Logger: logger})
		g.Go(func() error { return tailer.Run(ctx) })
		g.Go(func() error {
			// http.Server.Shutdown waits for open requests, and a stream
			// never ends by itself: closing the hub ends every stream.
			<-ctx.Done()
			hub.Close()
			return nil
		})
		srv := api.New(api.Config{ //nolint:contextcheck // handlers take their ctx from the request, not from here
			Store: st, Queue: q, Ingest: svc, Jobs: jobs,
			Replays:   replaySvc,
			Transform: transformer,
			Pull:      pull.New(pull.Config{Store: pullClientGate(st), Lifecycle: jobs, Hub: hub, Lease: cfg.Lease, TracerProvider: tracer}),
			Limits:    ingest.Limits{MaxEventBytes: cfg.MaxEventBytes, MaxRequestBytes: cfg.MaxRequestBytes, MaxBatch: cfg.MaxBatch},
			Services: newServices(&servicesConfig{
				Store: st, Jobs: jobs, IDs: ids, Subscriptions: subs, Registry: registry, PoolChangedFunc: pools.Invalidate, Replays: replaySvc,
				AllowPrivateTargets: cfg.AllowPrivateTargets, Destinations: destinations, Logger: logger,
			}),
			Subscriptions: subs, Keys: keys, TrustedProxies: proxies,
			IDs: ids, Version: version, Logger: logger, Metrics: m,
			Stream: api.StreamConfig{
				Hub: hub, Retention: cfg.StreamRetention, AuthRecheck: cfg.StreamAuthRecheck,
				MaxPerKey: cfg.MaxStreamsPerKey, MaxSubscriptions: cfg.MaxStreamSubscriptions,
			},
			UI: ui.Handler(), MetricsOnOwnListener: cfg.MetricsListen != "",
		})
		addr, err := listenAndServe(ctx, g, cfg.Listen, cfg.ShutdownTimeout, srv.Handler(), logger)
		if err != nil {
			return err
		}
		if readyFunc != nil {
			readyFunc(addr)
		}
	} else {
		// A router or pollers process serves no API, but its probes and
		// metrics scrape need /healthz, /readyz and /metrics.
		addr, err := listenAndServe(ctx, g, cfg.Listen, cfg.ShutdownTimeout, opsHandler(version, st, q, m), logger)
		if err != nil {
			return err
		}
		if readyFunc != nil {
			readyFunc(addr)
		}
	}
	logger.InfoContext(ctx, "hooklane started", "version", version, "listen", cfg.Listen,
		"store", storeKind(cfg), "queue", queueKind(cfg), "roles", cfg.Roles, "api_keys", keys.Names())
	err = g.Wait()
	logger.Info("hooklane stopped")
	return err
}

// prepareSecrets checks, before anything runs, that this gateway can read
// the stored secrets (API.md §14): a store holding secrets encrypted with
// another key, or encrypted while no key is set, refuses to start rather
// than send unsigned or unauthenticated requests. With a key, secrets still
// in plain text are encrypted now (the migration when a key is first set);
// without one, a warning says they are stored in plain text.
func prepareSecrets(ctx context.Context, st Store, box *secretbox.Box, logger *slog.Logger) error {
	census, err := st.SecretSealAll(ctx)
	switch {
	case errors.Is(err, secretbox.ErrNoKey):
		return fmt.Errorf("the store holds encrypted secrets and HOOKLANE_ENCRYPTION_KEY (--encryption-key) is not set: "+
			"start with the key they were encrypted with: %w", err)
	case errors.Is(err, secretbox.ErrWrongKey):
		return fmt.Errorf("HOOKLANE_ENCRYPTION_KEY (--encryption-key) is not the key the store's secrets were encrypted with "+
			"(this key's id is %s): start with the key they were encrypted with: %w", box.KeyID(), err)
	case err != nil:
		return fmt.Errorf("check stored secrets: %w", err)
	}
	switch {
	case box == nil:
		logger.WarnContext(ctx, "secrets are stored in plain text: set HOOKLANE_ENCRYPTION_KEY to encrypt them",
			"plain_secrets", census.Plain)
	case census.Plain > 0:
		logger.InfoContext(ctx, "stored secrets encrypted", "encrypted", census.Plain, "already_encrypted", census.Sealed,
			"key_id", box.KeyID())
	default:
		logger.InfoContext(ctx, "stored secrets are encrypted", "encrypted", census.Sealed, "key_id", box.KeyID())
	}
	return nil
}

// staleCheckInterval is the period of the stale-queued check: the
// configured one, but at most a quarter of StaleQueuedAfter, so that a job
// whose message was lost is sent again within about 1.25 × StaleQueuedAfter
// (a 60 s period with a 10 s threshold made it up to 70 s).
func staleCheckInterval(cfg *Config) time.Duration {
	return min(cfg.StalePollInterval, max(cfg.StaleQueuedAfter/4, time.Millisecond))
}

// recoverEmbedded re-queues, batch after batch, every job the previous
// process held in its in-process queue or was delivering.
func recoverEmbedded(ctx context.Context, r *pollers.Rescuer, logger *slog.Logger) error {
	stale, claimed := 0, 0
	for {
		n, err := r.RescueStale(ctx, 0)
		if err != nil {
			return fmt.Errorf("recover queued jobs: %w", err)
		}
		if n == 0 {
			break
		}
		stale += n
	}
	for {
		// Every claim belonged to the previous process: none is still running.
		n, err := r.RescueExpired(ctx, time.Now().Add(100*365*24*time.Hour))
		if err != nil {
			return fmt.Errorf("recover claimed jobs: %w", err)
		}
		if n == 0 {
			break
		}
		claimed += n
	}
	if stale+claimed > 0 {
		logger.InfoContext(ctx, "recovered jobs of the previous run", "queued", stale, "in_progress", claimed)
	}
	return nil
}

// listenAndServe binds a listener on addr now (so a bad address fails the
// start) and serves h until ctx ends, then shuts down within
// shutdownTimeout. It returns the bound address.
func listenAndServe(ctx context.Context, g *errgroup.Group, addr string, shutdownTimeout time.Duration, h http.Handler, logger *slog.Logger) (string, error) {
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("listen on %s: %w", addr, err)
	}
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	g.Go(func() error {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve http: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil {
			return fmt.Errorf("shut down http: %w", err)
		}
		return nil
	})
	return ln.Addr().String(), nil
}

func storeKind(cfg *Config) string {
	if cfg.MongoURI != "" {
		return "mongodb"
	}
	return "embedded"
}

func queueKind(cfg *Config) string {
	if cfg.SQSQueueURL != "" {
		return "sqs"
	}
	return "in-process"
}

// notifyingStore wakes the stream tailer after each local write that
// carries status events, so local events stream without waiting for a poll.
type notifyingStore struct {
	Store
	hub *stream.Hub
}

func (s notifyingStore) JobInsertMany(ctx context.Context, p *dispatch.JobInsertManyParams) error {
	err := s.Store.JobInsertMany(ctx, p)
	if err == nil && len(p.Events) > 0 {
		s.hub.Notify()
	}
	return err
}

func (s notifyingStore) JobUpdate(ctx context.Context, p *dispatch.JobUpdateParams) error {
	err := s.Store.JobUpdate(ctx, p)
	if err == nil && len(p.Events) > 0 {
		s.hub.Notify()
	}
	return err
}

func (s notifyingStore) CircuitUpdate(ctx context.Context, p *dispatch.CircuitUpdateParams) error {
	err := s.Store.CircuitUpdate(ctx, p)
	if err == nil && len(p.Events) > 0 {
		s.hub.Notify()
	}
	return err
}

func (s notifyingStore) SubscriptionDisable(ctx context.Context, p *dispatch.SubscriptionDisableParams) (bool, error) {
	changed, err := s.Store.SubscriptionDisable(ctx, p)
	if changed {
		s.hub.Notify()
	}
	return changed, err
}

func (s notifyingStore) EventIngest(ctx context.Context, p *dispatch.EventIngestParams) ([]dispatch.EventIngestResult, error) {
	res, err := s.Store.EventIngest(ctx, p)
	if err == nil {
		s.hub.Notify()
	}
	return res, err
}

// ingestFunc adapts a function to operational.Ingester.
type ingestFunc func(ctx context.Context, req *ingest.Request) ([]ingest.Result, error)

func (f ingestFunc) Ingest(ctx context.Context, req *ingest.Request) ([]ingest.Result, error) {
	return f(ctx, req)
}

// observation is one recorded attempt as the health aggregates count it.
func observation(j *dispatch.Job, a dispatch.Attempt, err error) health.Observation {
	msg := a.Error
	if msg == "" && err != nil {
		msg = err.Error()
	}
	d := time.Duration(a.DurationMs) * time.Millisecond
	return health.Observation{
		SubscriptionID: j.SubscriptionID, At: a.StartedAt.Add(d), OK: err == nil,
		Answered: a.StatusCode > 0, Latency: d, Error: endpoint.MaskTargetsInText(msg),
	}
}
