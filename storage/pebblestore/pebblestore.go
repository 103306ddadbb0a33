// Package pebblestore is the embedded data plane: the events, dispatch jobs
// and status events of Hooklane on Pebble (github.com/cockroachdb/pebble/v2),
// an LSM key-value engine in pure Go. It implements the data-plane ports
// (event.Store, dispatch.Store, stream.Store and the event and job reads of
// replay.Store); the control plane (event types, subscriptions, clients,
// pools, circuits, health, replays) stays in storage/sqlitestore, and
// storage/embedded puts the two together.
//
// # Durability
//
// Every write is one Pebble batch committed with a synced WAL append
// (Config.NoSync aside): a call that returns nil has been fsynced. Pebble's
// commit pipeline shares one fsync between the batches committed while the
// previous one syncs.
//
// # Concurrency
//
// Pebble has no transactions, so every write that reads before it writes (a
// deduplication lookup, a version check, an index entry to move) runs on a
// single writer goroutine that owns the read-check-write: it takes every
// write waiting (up to MaxBatch), runs them against one indexed batch (each
// sees the ones before it), applies the batch and hands it to a syncer
// goroutine, which waits for its fsync and answers the callers while the
// writer builds the next batch. One operation's failure (a conflict, a
// missing record) fails that operation alone: an operation checks
// everything before it writes anything. Reads go straight to Pebble, each
// on one consistent view.
//
// A caller whose ctx ends while its write waits for the writer gets
// ctx.Err(), and the write is never run; once the writer has taken the
// write, the caller waits for its commit's answer (store.Handoff), so an
// error never hides a write that lands.
//
// # Keyspace
//
// One key per record (the event, the job, the status event) holding a
// small binary header of the fields the indexes and filters need and, for
// events and jobs, the JSON document; secondary indexes are kept by hand as
// keys with empty or small values (codec.go lists them). Timestamps keep
// millisecond precision and are returned in UTC.
//
// Pebble locks its directory: one process at a time opens it.
package pebblestore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"

	"github.com/hooklane/hooklane/storage/secretbox"
	"github.com/hooklane/hooklane/store"
)

// MaxBatch is the most write operations one commit holds.
const MaxBatch = 256

// bloomBitsPerKey sizes the tables' bloom filters.
const bloomBitsPerKey = 10

// CacheSizeDefault is the block cache's size unless Config.CacheSize says
// otherwise. Every write looks up keys it is about to write (a status
// event id, a dedup key, a job): with Pebble's own default of 8 MiB the
// tables' index and filter blocks fell out of the cache and those
// lookups read them from disk — 13 % of the gateway's CPU at 1,000
// events/s open loop, 2 % with 64 MiB (BENCHMARKS.md, issue 30).
const CacheSizeDefault = 64 << 20

// MemTableSizeDefault is the memtable's size unless Config.MemTableSize
// says otherwise; Pebble's own default is 4 MiB. At a sustained 1,300–1,900
// events/s a 4-MiB memtable filled about every second, and every flush
// added an L0 table that the next lookups had to consult and that a
// compaction soon rewrote into the level below, together with the status
// and group index ranges every table overlaps: in 60-s closed-loop runs
// the gateway spent 1.29 CPU ms per delivered event with 4 MiB and 0.94
// with 32 MiB (3 interleaved rounds, BENCHMARKS.md, session 15), for
// about 60 MiB more peak RSS (a full memtable and the one being flushed).
const MemTableSizeDefault = 32 << 20

// syncQueue is how many applied batches may wait for their fsync while the
// writer builds the next one.
const syncQueue = 4

// Config configures a Store.
type Config struct {
	// Dir is the directory of the Pebble database; it is created when
	// missing. Required.
	Dir string
	// Logger receives the store's logs; nil discards them.
	Logger *slog.Logger
	// NowFunc is the clock, for the fan-out marker EventIngest sets; nil
	// means time.Now.
	NowFunc func() time.Time
	// NoSync commits without waiting for the WAL's fsync: a committed write
	// survives a crash of the process but the last ones may be lost with
	// the machine (sqlitestore's synchronous NORMAL). False, the default,
	// syncs every commit.
	NoSync bool
	// Box seals the jobs' secrets the store writes and opens them as it
	// reads them. Nil stores them in plain text and fails to read a
	// sealed one.
	Box *secretbox.Box
	// CacheSize is the block cache's size in bytes; 0 is
	// CacheSizeDefault.
	CacheSize int64
	// MemTableSize is the memtable's size in bytes; 0 is
	// MemTableSizeDefault.
	MemTableSize uint64
}

// Store is the Pebble data plane. It is safe for concurrent use. Create it
// with Open and release it with Close.
type Store struct {
	*engine

	logger  *slog.Logger
	nowFunc func() time.Time
	box     *secretbox.Box
	closed  atomic.Bool
}

// engine is the open database with its writer: what the Stores that Share
// returns have in common.
type engine struct {
	logger *slog.Logger
	db     *pebble.DB
	sync   *pebble.WriteOptions

	// mu is held for reading by every call that uses db, and for writing
	// while db closes, so that db is never used after it is closed.
	mu   sync.RWMutex
	down atomic.Bool
	// refs counts the open Stores of the engine.
	refs atomic.Int64

	ops        chan *writeOp
	stop       chan struct{}
	writerDone chan struct{}
	syncs      chan *pendingBatch
	syncerDone chan struct{}

	// batches, batchedOps and batchedKeys count the commits, the
	// operations they held and the keys they wrote; lookups the point
	// reads the writes made (writeTx.get and has).
	batches, batchedOps, batchedKeys, lookups atomic.Int64
}

// Open opens (creating when needed) the database in cfg.Dir and starts the
// writer and syncer goroutines.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Dir == "" {
		return nil, errors.New("open pebble store: Dir is required")
	}
	logger := cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)).With("component", "pebblestore")
	e := &engine{
		logger:     logger,
		sync:       pebble.Sync,
		ops:        make(chan *writeOp),
		stop:       make(chan struct{}),
		writerDone: make(chan struct{}),
		syncs:      make(chan *pendingBatch, syncQueue),
		syncerDone: make(chan struct{}),
	}
	if cfg.NoSync {
		e.sync = pebble.NoSync
	}
	opts := &pebble.Options{
		Logger:       pebbleLogger{logger: logger},
		CacheSize:    cmp.Or(cfg.CacheSize, CacheSizeDefault),
		MemTableSize: cmp.Or(cfg.MemTableSize, MemTableSizeDefault),
	}
	// Every write looks keys up before it writes them (a dedup key, a job,
	// a status event id), most of them missing: a bloom filter per table
	// (10 bits a key, ~1 % false positives, inherited by every level)
	// answers those without reading a block.
	opts.Levels[0].FilterPolicy = bloom.FilterPolicy(bloomBitsPerKey)
	db, err := pebble.Open(cfg.Dir, opts)
	if err != nil {
		return nil, fmt.Errorf("open pebble store %s: %w", cfg.Dir, err)
	}
	e.db = db
	e.refs.Store(1)
	go e.runWriter()
	go e.runSyncer()
	logger.DebugContext(ctx, "pebble store open", "dir", cfg.Dir)
	nowFunc := cfg.NowFunc
	if nowFunc == nil {
		nowFunc = time.Now
	}
	return &Store{engine: e, logger: logger, nowFunc: nowFunc, box: cfg.Box}, nil
}

// Share returns another Store on the same open database, sealing and
// opening secrets with box: Pebble locks its directory, so a second Open
// of it in one process fails. The database closes with the last of its
// Stores. store.ErrClosed when s is closed.
func (s *Store) Share(box *secretbox.Box) (*Store, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	for {
		n := s.refs.Load()
		if n == 0 {
			return nil, store.ErrClosed
		}
		if s.refs.CompareAndSwap(n, n+1) {
			return &Store{engine: s.engine, logger: s.logger, nowFunc: s.nowFunc, box: box}, nil
		}
	}
}

// Ping reports whether the store is open.
func (s *Store) Ping(context.Context) error {
	return s.checkOpen()
}

// Close closes the Store; with the last Store of the database it stops the
// writer after the operations it holds, waits for their fsync and closes
// the database. Every later call returns store.ErrClosed; Close itself may
// be called again and then returns nil.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	if s.refs.Add(-1) > 0 {
		return nil
	}
	s.down.Store(true)
	close(s.stop)
	<-s.writerDone
	<-s.syncerDone
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close pebble store: %w", err)
	}
	return nil
}

func (s *Store) checkOpen() error {
	if s.closed.Load() || s.down.Load() {
		return store.ErrClosed
	}
	return nil
}

func (e *engine) checkOpen() error {
	if e.down.Load() {
		return store.ErrClosed
	}
	return nil
}

// read runs fn with the database held open; store.ErrClosed when closed.
func (s *Store) read(fn func(db *pebble.DB) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.checkOpen(); err != nil {
		return err
	}
	return fn(s.db)
}

// get returns a copy of the value of k, nil when it is missing.
func get(r pebble.Reader, k []byte) ([]byte, error) {
	v, closer, err := r.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get: %w", err)
	}
	out := append(make([]byte, 0, len(v)), v...)
	if err := closer.Close(); err != nil {
		return nil, fmt.Errorf("get: %w", err)
	}
	return out, nil
}

// scan calls fn for every key in [lower, upper) in ascending order (in
// descending order when reverse), until fn returns false or an error.
func scan(r pebble.Reader, lower, upper []byte, reverse bool, fn func(k, v []byte) (bool, error)) error {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("open iterator: %w", err)
	}
	valid := it.First
	step := it.Next
	if reverse {
		valid, step = it.Last, it.Prev
	}
	for ok := valid(); ok; ok = step() {
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return fmt.Errorf("read value: %w", err)
		}
		more, err := fn(it.Key(), v)
		if err != nil || !more {
			_ = it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("iterate: %w", err)
	}
	return nil
}

// pebbleLogger sends Pebble's logs to the store's logger: its
// informational lines at debug level.
type pebbleLogger struct{ logger *slog.Logger }

func (l pebbleLogger) Infof(format string, args ...any) {
	l.logger.Debug("pebble", "message", fmt.Sprintf(format, args...))
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.logger.Error("pebble", "message", fmt.Sprintf(format, args...))
}

func (l pebbleLogger) Fatalf(format string, args ...any) {
	l.logger.Error("pebble fatal", "message", fmt.Sprintf(format, args...))
	panic(fmt.Sprintf(format, args...))
}
