// Package mongostore is the MongoDB storage adapter: it implements every
// storage port of the gateway (see store/storetest) on go.mongodb.org/mongo-driver/v2.
//
// It uses no multi-document transaction, so it runs on deployments without
// them (FerretDB, standalone servers). Writes that span several documents are
// made idempotent instead: events first, then their jobs (deterministic ids),
// then status events, and the event's fannedOutAt marker last (written
// after the request, by the status relay's goroutine: see fanOutMarks), so
// a crash in between leaves work the fan-out recovery poller finishes. A job's status
// events are written inside the job's own document by the write that
// causes them, and moved to the statusEvents collection by a relay
// (statusRelay).
//
// Every time is stored as a BSON date, which keeps milliseconds: the adapter
// truncates times to the millisecond, in UTC, on the way in.
package mongostore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"

	"github.com/hooklane/hooklane/storage/secretbox"
	"github.com/hooklane/hooklane/store"
)

// DatabaseDefault is the database used when Config.Database is empty.
const DatabaseDefault = "hooklane"

// serverSelectionTimeoutDefault bounds how long an operation waits for a
// reachable server before it fails with store.ErrUnavailable. The driver's
// own default (30 s) would hold API requests far past any client timeout; a
// connection string's serverSelectionTimeoutMS overrides it.
const serverSelectionTimeoutDefault = 10 * time.Second

// closeTimeout bounds Close: the driver ends its sessions and connections.
const closeTimeout = 10 * time.Second

// Collection names.
const (
	collEvents        = "events"
	collJobs          = "jobs"
	collSubscriptions = "subscriptions"
	collEventTypes    = "eventTypes"
	collPools         = "pools"
	collStatusEvents  = "statusEvents"
	collMeta          = "meta"
	collGuards        = "writeGuards"
	collCircuits      = "circuits"
	collHealthMinutes = "healthMinutes"
	collHealthLast    = "healthLast"
)

// Config configures Open.
type Config struct {
	// URI is the MongoDB connection string, e.g. mongodb://127.0.0.1:27017/.
	// Required.
	URI string
	// Database is the database name. Default DatabaseDefault ("hooklane").
	Database string
	// Logger receives the adapter's logs. Default: discarded.
	Logger *slog.Logger
	// NowFunc is the clock, read when EventIngest marks events fanned out
	// and to date write guards (see replaceVersioned). Default time.Now.
	NowFunc func() time.Time
	// OnCommandFunc, when set, is called with the name of every command
	// the driver sends (find, insert, update, findAndModify, getMore, …),
	// from the driver's command monitoring, to count round trips. It must
	// be fast and safe for concurrent use. The commands that only FerretDB
	// is sent are named apart, so a count can subtract them: a write
	// guard's (taking it, the version read under it, releasing it:
	// "guard:insert", "guard:find", "guard:delete"; see replaceVersioned)
	// and the per-document updates FerretDB gets where MongoDB gets one
	// command for many ("ferretdb:update"). The status relay's commands,
	// which MongoDB gets too, are named "relay:find", "relay:insert",
	// "relay:update" (see statusRelay).
	OnCommandFunc func(name string)
	// Box seals the secrets the store writes (subscriptions' signing
	// secrets, auth secrets and TLS client keys; jobs' signing secrets,
	// auth and TLS keys) and opens them as it reads them (secrets.go).
	// Nil stores them in plain text and fails to read a sealed one.
	Box *secretbox.Box
	// StatusRelayInterval is the least time between two rounds of the
	// relay that moves the status events job writes hold in the job's
	// document to the statusEvents collection (see statusRelay): a status
	// event reaches the stream's tailers within about this much, and an
	// ingested event's fannedOutAt mark is written within about this much
	// (see fanOutMarks). Default StatusRelayIntervalDefault (200 ms), well
	// inside the tailer's settle delay (stream.SettleDefault, 500 ms) and
	// the fan-out recovery poller's grace (30 s).
	StatusRelayInterval time.Duration
}

func (c *Config) validate() error {
	if c.URI == "" {
		return errors.New("mongo URI (HOOKLANE_MONGO_URI / --mongo-uri) is required")
	}
	return nil
}

// Store is the MongoDB adapter. It is safe for concurrent use. After Close,
// every method returns store.ErrClosed.
type Store struct {
	client  *mongo.Client
	db      *mongo.Database
	logger  *slog.Logger
	nowFunc func() time.Time
	box     *secretbox.Box
	closed  atomic.Bool
	// writeGuards is true on servers whose filtered replace is not atomic
	// (FerretDB); see replaceVersioned.
	writeGuards bool
	// holdStatus is true when job writes hold their status events in the
	// job's document for the status relay (see statusRelay): on MongoDB.
	// On FerretDB the relay's clear costs four commands a job under its
	// write guard and makes JobUpdate wait for the guard, more than the
	// shared status insert it replaces (measured: delivered events/s fell
	// by about a quarter on the local stack), so FerretDB keeps inserting
	// them apart.
	holdStatus bool

	events        *mongo.Collection
	jobs          *mongo.Collection
	subscriptions *mongo.Collection
	eventTypes    *mongo.Collection
	pools         *mongo.Collection
	statusEvents  *mongo.Collection
	meta          *mongo.Collection
	guards        *mongo.Collection
	circuits      *mongo.Collection
	healthMinutes *mongo.Collection
	healthLast    *mongo.Collection

	// statusInserts shares the status event inserts of concurrent writes
	// (see groupInserter).
	statusInserts groupInserter
	// jobInserts shares the job inserts of concurrent ingests; an id
	// already stored is skipped.
	jobInserts groupInserter
	// fanOutMarks holds the fannedOutAt marks of ingested events until
	// the status relay's goroutine writes them (see fanOutMarks).
	fanOutMarks fanOutMarks
	// relay moves the status events held in job documents to
	// statusEvents; its goroutine runs from Open to Close.
	relay *statusRelay
	// jobCommits shares the job writes of concurrent JobUpdate calls
	// (see jobCommitter).
	jobCommits *jobCommitter
}

// Open connects to the server at cfg.URI, checks that it answers and creates
// the indexes the adapter relies on (idempotently: running Open again, from
// any number of instances, changes nothing). An unreachable server gives an
// error wrapping store.ErrUnavailable.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("open mongo store: %w", err)
	}
	opts := options.Client().
		SetServerSelectionTimeout(serverSelectionTimeoutDefault).
		ApplyURI(cfg.URI)
	if cfg.OnCommandFunc != nil {
		onCommand := cfg.OnCommandFunc
		opts.SetMonitor(&event.CommandMonitor{Started: func(ctx context.Context, e *event.CommandStartedEvent) {
			onCommand(commandLabel(ctx, e.CommandName))
		}})
	}
	client, err := mongo.Connect(opts)
	if err != nil {
		return nil, fmt.Errorf("connect to mongo: %w", err)
	}
	db := client.Database(cmp.Or(cfg.Database, DatabaseDefault))
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{
		client:        client,
		db:            db,
		logger:        logger.With("component", "mongostore"),
		nowFunc:       cfg.NowFunc,
		box:           cfg.Box,
		events:        db.Collection(collEvents),
		jobs:          db.Collection(collJobs),
		subscriptions: db.Collection(collSubscriptions),
		eventTypes:    db.Collection(collEventTypes),
		pools:         db.Collection(collPools),
		statusEvents:  db.Collection(collStatusEvents),
		meta:          db.Collection(collMeta),
		guards:        db.Collection(collGuards),
		circuits:      db.Collection(collCircuits),
		healthMinutes: db.Collection(collHealthMinutes),
		healthLast:    db.Collection(collHealthLast),
	}
	if s.nowFunc == nil {
		s.nowFunc = time.Now
	}
	if s.jobCommits, err = newJobCommitter(s); err != nil {
		_ = client.Disconnect(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("open mongo store: %w", err)
	}
	s.statusInserts.insert = func(ctx context.Context, docs []any) error {
		_, err := insertIgnoringDuplicates(ctx, s.statusEvents, docs)
		return err
	}
	s.jobInserts.insert = func(ctx context.Context, docs []any) error {
		_, err := insertIgnoringDuplicates(ctx, s.jobs, docs)
		return err
	}
	if err := s.prepare(ctx); err != nil {
		_ = client.Disconnect(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("open mongo store: %w", err)
	}
	s.relay = newStatusRelay(s, cmp.Or(cfg.StatusRelayInterval, StatusRelayIntervalDefault))
	// What an earlier process left held in job documents is relayed now.
	if err := s.relay.flush(ctx); err != nil {
		_ = client.Disconnect(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("open mongo store: %w", err)
	}
	go s.relay.run(context.WithoutCancel(ctx))
	s.logger.DebugContext(ctx, "mongo store opened", "database", db.Name(), "write_guards", s.writeGuards)
	return s, nil
}

// prepare checks that the server answers, creates the indexes and the
// generation counters, and learns whether the server needs write guards.
func (s *Store) prepare(ctx context.Context) error {
	if err := s.ping(ctx); err != nil {
		return err
	}
	if err := s.createIndexes(ctx); err != nil {
		return err
	}
	if err := s.initGenerations(ctx); err != nil {
		return err
	}
	guards, err := s.isFerretDB(ctx)
	if err != nil {
		return err
	}
	s.writeGuards = guards
	s.holdStatus = !guards
	if err := s.prepareSubscriptionVersions(ctx); err != nil {
		return err
	}
	return s.prepareClients(ctx)
}

// prepareSubscriptionVersions gives version 0 to subscriptions stored
// before versions existed, so that their updates find the version they
// read.
func (s *Store) prepareSubscriptionVersions(ctx context.Context) error {
	res, err := s.subscriptions.UpdateMany(ctx, bson.D{{Key: "version", Value: bson.D{{Key: "$exists", Value: false}}}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "version", Value: int64(0)}}}})
	if err != nil {
		return fmt.Errorf("give subscriptions a version: %w", translate(ctx, err))
	}
	if res.ModifiedCount > 0 {
		s.logger.InfoContext(ctx, "subscriptions given a version", "count", res.ModifiedCount)
	}
	return nil
}

// Ping reports whether the database is reachable: nil, or an error wrapping
// store.ErrUnavailable (store.ErrClosed after Close).
func (s *Store) Ping(ctx context.Context) error {
	if err := s.check(); err != nil {
		return err
	}
	return s.ping(ctx)
}

func (s *Store) ping(ctx context.Context) error {
	if err := s.client.Ping(ctx, readpref.Primary()); err != nil {
		err = translate(ctx, err)
		if !errors.Is(err, store.ErrUnavailable) && !errors.Is(err, store.ErrClosed) && ctx.Err() == nil {
			// Any failure to answer a ping means the database cannot be
			// used, whatever the driver calls it.
			err = fmt.Errorf("%w: %w", store.ErrUnavailable, err)
		}
		return fmt.Errorf("ping mongo: %w", err)
	}
	return nil
}

// Close disconnects from the server. It is safe to call more than once; only
// the first call does anything.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	s.relay.close()
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	// The marks still waiting; those not written are the recovery
	// poller's (see fanOutMarks).
	if err := s.writeFanOutMarks(ctx); err != nil {
		s.logger.WarnContext(ctx, "write fanned-out marks at close", "error", err)
	}
	if err := s.client.Disconnect(ctx); err != nil {
		return fmt.Errorf("disconnect from mongo: %w", err)
	}
	return nil
}

// check returns store.ErrClosed once the store is closed.
func (s *Store) check() error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return nil
}

// ms is how every time is stored: UTC, truncated to the millisecond (the
// precision of a BSON date), so what is read back equals what was written.
func ms(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Millisecond)
}

// msPtr is ms for optional times.
func msPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := ms(*t)
	return &v
}

// utcPtr returns a decoded optional time in UTC.
func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := t.UTC()
	return &v
}

// utc returns a decoded time in UTC, keeping the zero time zero.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

// findAll runs a query and decodes every result into docs of type T.
func findAll[T any](ctx context.Context, c *mongo.Collection, filter any, opts ...options.Lister[options.FindOptions]) ([]T, error) {
	cur, err := c.Find(ctx, filter, opts...)
	if err != nil {
		return nil, translate(ctx, err)
	}
	var docs []T
	if err := cur.All(ctx, &docs); err != nil {
		return nil, translate(ctx, err)
	}
	return docs, nil
}

// deleteOldest deletes up to limit documents matching filter, the first in
// sort order. A delete has no limit in MongoDB (beyond one), so it reads the
// ids first; documents deleted meanwhile by someone else are not counted.
func deleteOldest(ctx context.Context, c *mongo.Collection, filter bson.D, sort bson.D, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	type idDoc struct {
		ID string `bson:"_id"`
	}
	docs, err := findAll[idDoc](ctx, c, filter, options.Find().
		SetSort(sort).SetLimit(int64(limit)).SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return 0, err
	}
	if len(docs) == 0 {
		return 0, nil
	}
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	// The filter is applied again: a document that changed since it was
	// read (a job retried meanwhile) is kept.
	del := append(bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}}, filter...)
	res, err := c.DeleteMany(ctx, del)
	if err != nil {
		return 0, translate(ctx, err)
	}
	return int(res.DeletedCount), nil
}
