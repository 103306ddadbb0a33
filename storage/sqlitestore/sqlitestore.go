// Package sqlitestore is the embedded store: every storage port of Hooklane
// on one SQLite file, through the pure-Go modernc.org/sqlite driver.
//
// # Concurrency
//
// The database runs in WAL mode, so readers never wait for the writer. Reads
// use a small pool of read-only connections. Writes go to a single writer
// goroutine that owns the only writing connection and commits in groups: it
// takes every write operation waiting (up to [MaxBatch]) and runs them in one
// transaction, each inside its own SAVEPOINT so that one operation's failure
// (a conflict, a missing record) undoes and fails only that operation. A
// transaction of many rows costs about as much as one of a single row, so
// group commit raises the write rate several times (~14k single-row
// autocommits/s against ~66k rows/s in transactions of 100 on a 2-core
// machine). With a commit window ([Config.CommitWindow]) the writer also
// waits a moment for company when writes are concurrent, so that moderate
// rates, where few writes would be waiting, still share their commits.
//
// A caller whose ctx ends while its write waits for the writer gets
// ctx.Err(), and the write is never run; once the writer has taken the
// write, the caller waits for its commit's answer (store.Handoff), so an
// error never hides a write that lands.
//
// # Storage
//
// Each record is a JSON document plus the columns its queries need.
// Timestamps in columns are unix milliseconds; every timestamp is kept with
// millisecond precision and returned in UTC.
package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"runtime"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/hooklane/hooklane/storage/secretbox"
	"github.com/hooklane/hooklane/store"
)

// MaxBatch is the most write operations one group-commit transaction runs.
const MaxBatch = 256

// BusyTimeoutDefault is how long a connection waits for a lock held by
// another process (a backup, the sqlite3 shell) before failing.
const BusyTimeoutDefault = 5 * time.Second

// Config configures a Store.
type Config struct {
	// Path is the database file; it is created when missing. Required.
	Path string
	// Logger receives the store's logs; nil discards them.
	Logger *slog.Logger
	// NowFunc is the clock, for the fan-out marker EventIngest sets and
	// migration records; nil means time.Now.
	NowFunc func() time.Time
	// Readers is the number of read connections; 0 means
	// max(4, GOMAXPROCS).
	Readers int
	// BusyTimeout is how long to wait for a lock held elsewhere; 0 means
	// BusyTimeoutDefault.
	BusyTimeout time.Duration
	// Synchronous is SQLite's synchronous setting: SynchronousFull (the
	// default, also for "") syncs the WAL at every commit, so a committed
	// write — an event answered 201 — survives a power loss or an OS crash;
	// one fsync per group commit, shared by every write in it.
	// SynchronousNormal syncs only at checkpoints: a commit survives a
	// crash of the process but the last ones may be lost with the machine.
	Synchronous string
	// CommitWindow is how long the writer waits, after the first write of
	// a transaction, for more writes to commit with it, when writes are
	// concurrent (it found more than one waiting, or the last transaction
	// held more than one) and fewer than eight are gathered; 0 means it
	// commits what is queued at once. A window of a fraction of a
	// millisecond trades at most that much latency for fewer commits at
	// moderate rates (BENCHMARKS.md, "The commit window"). At most
	// MaxCommitWindow.
	CommitWindow time.Duration
	// Box seals the secrets the store writes (subscriptions' signing
	// secrets, auth secrets and TLS client keys; jobs' signing secrets,
	// auth and TLS keys) and opens them as it reads them (secrets.go).
	// Nil stores them in plain text and fails to read a sealed one.
	Box *secretbox.Box
}

// MaxCommitWindow bounds Config.CommitWindow.
const MaxCommitWindow = 50 * time.Millisecond

// Synchronous settings of Config.Synchronous.
const (
	SynchronousFull   = "FULL"
	SynchronousNormal = "NORMAL"
)

// Store is the SQLite store. It implements every storage port and is safe for
// concurrent use. Create it with Open and release it with Close.
type Store struct {
	logger  *slog.Logger
	nowFunc func() time.Time
	box     *secretbox.Box
	wdb     *sql.DB // one connection, used only by the writer goroutine
	rdb     *sql.DB // read-only connections
	reads   readStmts

	ops        chan *writeOp
	stop       chan struct{}
	writerDone chan struct{}
	closed     atomic.Bool

	// batches and batchedOps count the group-commit transactions and the
	// operations they ran.
	batches, batchedOps atomic.Int64
	// waiting counts the callers waiting to hand an operation to the
	// writer.
	waiting atomic.Int64
	// commitWindow is Config.CommitWindow.
	commitWindow time.Duration
}

// Open opens (creating when needed) and migrates the database at cfg.Path,
// and starts the writer goroutine.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Path == "" {
		return nil, errors.New("open sqlite store: Path is required")
	}
	if cfg.CommitWindow < 0 || cfg.CommitWindow > MaxCommitWindow {
		return nil, fmt.Errorf("open sqlite store: CommitWindow must be between 0 and %v, not %v", MaxCommitWindow, cfg.CommitWindow)
	}
	s := &Store{
		logger:     cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)).With("component", "sqlitestore"),
		nowFunc:    cfg.NowFunc,
		box:        cfg.Box,
		ops:        make(chan *writeOp),
		stop:       make(chan struct{}),
		writerDone: make(chan struct{}),

		commitWindow: cfg.CommitWindow,
	}
	if s.nowFunc == nil {
		s.nowFunc = time.Now
	}
	busy := cmp.Or(cfg.BusyTimeout, BusyTimeoutDefault)
	readers := cmp.Or(cfg.Readers, max(4, runtime.GOMAXPROCS(0)))

	var err error
	syncMode := cmp.Or(cfg.Synchronous, SynchronousFull)
	if syncMode != SynchronousFull && syncMode != SynchronousNormal {
		return nil, fmt.Errorf("open sqlite store: synchronous must be %s or %s, not %q", SynchronousFull, SynchronousNormal, syncMode)
	}
	s.wdb, err = sql.Open("sqlite", dsn(cfg.Path, busy, syncMode, false))
	if err != nil {
		return nil, fmt.Errorf("open sqlite writer %s: %w", cfg.Path, err)
	}
	s.wdb.SetMaxOpenConns(1)
	s.wdb.SetMaxIdleConns(1)
	s.wdb.SetConnMaxLifetime(0)
	s.wdb.SetConnMaxIdleTime(0)
	if err := migrate(ctx, s.wdb, s.nowFunc().UnixMilli()); err != nil {
		_ = s.wdb.Close()
		return nil, fmt.Errorf("migrate sqlite store %s: %w", cfg.Path, err)
	}
	if err := backfillClients(ctx, s.wdb, s.logger); err != nil {
		_ = s.wdb.Close()
		return nil, fmt.Errorf("migrate sqlite store %s: %w", cfg.Path, err)
	}
	s.rdb, err = sql.Open("sqlite", dsn(cfg.Path, busy, syncMode, true))
	if err != nil {
		_ = s.wdb.Close()
		return nil, fmt.Errorf("open sqlite readers %s: %w", cfg.Path, err)
	}
	s.rdb.SetMaxOpenConns(readers)
	s.rdb.SetMaxIdleConns(readers)
	if err := s.rdb.PingContext(ctx); err != nil {
		_ = s.wdb.Close()
		_ = s.rdb.Close()
		return nil, fmt.Errorf("ping sqlite store %s: %w", cfg.Path, err)
	}
	go s.runWriter() //nolint:contextcheck // the writer outlives Open's ctx; its statements use none of the callers' contexts (see commitBatch)
	s.logger.DebugContext(ctx, "sqlite store open", "path", cfg.Path, "readers", readers)
	return s, nil
}

// dsn builds the driver's connection string. Every connection gets WAL,
// the synchronous setting (see Config.Synchronous) and the busy timeout;
// readers are also query_only.
func dsn(path string, busy time.Duration, synchronous string, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+synchronous+")")
	q.Add("_pragma", "foreign_keys(1)")
	// Every operation of a group commit runs in a savepoint, whose undo log
	// (the statement journal) would otherwise be a temporary file written on
	// every change.
	q.Add("_pragma", "temp_store(MEMORY)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		// The writer takes the write lock when it begins, not midway
		// through a group of operations.
		q.Set("_txlock", "immediate")
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if err := s.rdb.PingContext(ctx); err != nil {
		return fmt.Errorf("ping sqlite store: %w", s.translate(err))
	}
	return nil
}

// Close stops the writer goroutine after the operations it holds and closes
// the database. Every later call returns store.ErrClosed; Close itself may be
// called again and then returns nil.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(s.stop)
	<-s.writerDone
	s.reads.close()
	if err := errors.Join(s.wdb.Close(), s.rdb.Close()); err != nil {
		return fmt.Errorf("close sqlite store: %w", err)
	}
	return nil
}

func (s *Store) checkOpen() error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return nil
}

// translate maps driver errors to the store sentinels.
func (s *Store) translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	if se, ok := errors.AsType[*sqlite.Error](err); ok {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%w: %s", store.ErrConflict, se.Error())
		}
	}
	if s.closed.Load() {
		return fmt.Errorf("%w: %w", store.ErrClosed, err)
	}
	return err
}
