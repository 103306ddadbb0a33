package storespike

import (
	"context"
	"database/sql" //nolint:depguard // the spike's reshaped SQLite prototype speaks SQL, in a test file that nothing imports
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite" //nolint:depguard // the driver of the spike's reshaped SQLite prototype, in a test file

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/stream"
)

// reshapedSchema is SQLite reshaped for appends: every table keyed by its
// ULID WITHOUT ROWID (one b-tree, not a rowid table plus a primary-key
// index), the status history inside the job row, and only the indexes a
// poller or the dedup check needs. Today's schema writes 21 b-trees to
// ingest an event with one job (writes_test.go); this one writes 5.
const reshapedSchema = `
CREATE TABLE events (
    id            TEXT PRIMARY KEY,
    dedup_key     TEXT NOT NULL,
    received_at   INTEGER NOT NULL,
    fanned_out_at INTEGER,
    doc           BLOB NOT NULL
) WITHOUT ROWID;
CREATE UNIQUE INDEX events_dedup_key ON events (dedup_key);
-- the fan-out poller's; an ingest sets fanned_out_at, so it is not written
CREATE INDEX events_not_fanned_out ON events (id) WHERE fanned_out_at IS NULL;

CREATE TABLE jobs (
    id      TEXT PRIMARY KEY,
    status  TEXT NOT NULL,
    due     INTEGER NOT NULL,
    version INTEGER NOT NULL,
    doc     BLOB NOT NULL,
    history BLOB NOT NULL -- the job's status events, appended
) WITHOUT ROWID;
CREATE INDEX jobs_due ON jobs (status, due, id);

-- the status feed (/api/stream resume, retention by time: ULIDs)
CREATE TABLE status_events (
    id      TEXT PRIMARY KEY,
    subject TEXT NOT NULL,
    data    BLOB NOT NULL
) WITHOUT ROWID;
`

// reshapedStore is the prototype of SQLite reshaped, written through a
// group-commit writer like sqlitestore's (writer.go): one goroutine owns
// the only writing connection, runs every operation waiting in one
// transaction, each in its own savepoint, and waits up to the commit
// window for company when writes are concurrent.
type reshapedStore struct {
	db      *sql.DB
	ops     chan *reshapedOp
	stop    chan struct{}
	done    chan struct{}
	commits atomic.Int64
}

type reshapedOp struct {
	fn     func(ctx context.Context, tx *sql.Tx, st *reshapedStmts) error
	result chan error
}

// reshapedStmts are the writer's statements, prepared once.
type reshapedStmts struct {
	dedup, insertEvent, insertJob, insertStatus, updateJob *sql.Stmt
}

func reshapedDSN(path string) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "temp_store(MEMORY)")
	q.Set("_txlock", "immediate")
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

func openReshaped(tb testing.TB, dir string) *reshapedStore {
	tb.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", reshapedDSN(filepath.Join(dir, "reshaped.db")))
	require.NoError(tb, err)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	_, err = db.ExecContext(ctx, reshapedSchema)
	require.NoError(tb, err)
	prep := func(q string) *sql.Stmt {
		st, err := db.PrepareContext(ctx, q)
		require.NoError(tb, err)
		return st
	}
	stmts := &reshapedStmts{
		dedup:        prep(`SELECT id FROM events WHERE dedup_key = ?`),
		insertEvent:  prep(`INSERT INTO events (id, dedup_key, received_at, fanned_out_at, doc) VALUES (?, ?, ?, ?, ?)`),
		insertJob:    prep(`INSERT INTO jobs (id, status, due, version, doc, history) VALUES (?, ?, ?, 1, ?, ?)`),
		insertStatus: prep(`INSERT INTO status_events (id, subject, data) VALUES (?, ?, ?)`),
		updateJob: prep(`UPDATE jobs SET status = ?, due = ?, version = version + 1, doc = ?, history = history || ?
			WHERE id = ? AND version = ?`),
	}
	s := &reshapedStore{db: db, ops: make(chan *reshapedOp), stop: make(chan struct{}), done: make(chan struct{})}
	go s.run(stmts)
	return s
}

func (s *reshapedStore) Close() error {
	close(s.stop)
	<-s.done
	return s.db.Close() //nolint:wrapcheck // the driver's error, in a test
}

// write runs fn in the writer's next group commit and returns its error, or
// the commit's.
func (s *reshapedStore) write(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx, st *reshapedStmts) error) error {
	op := &reshapedOp{fn: fn, result: make(chan error, 1)}
	select {
	case s.ops <- op:
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-op.result
}

// maxReshapedBatch and reshapedWindowOps are sqlitestore's MaxBatch and
// commitWindowOps.
const (
	maxReshapedBatch  = 256
	reshapedWindowOps = 8
)

func (s *reshapedStore) run(stmts *reshapedStmts) {
	defer close(s.done)
	batch := make([]*reshapedOp, 0, maxReshapedBatch)
	prev := 0
	for {
		select {
		case <-s.stop:
			return
		case op := <-s.ops:
			batch = append(batch[:0], op)
		}
	drain:
		for len(batch) < maxReshapedBatch {
			select {
			case op := <-s.ops:
				batch = append(batch, op)
			default:
				break drain
			}
		}
		if len(batch) > 1 || prev > 1 {
			batch = s.gather(batch)
		}
		s.commit(batch, stmts)
		prev = len(batch)
		clear(batch)
	}
}

func (s *reshapedStore) gather(batch []*reshapedOp) []*reshapedOp {
	if len(batch) >= reshapedWindowOps {
		return batch
	}
	t := time.NewTimer(commitWindow)
	defer t.Stop()
	for len(batch) < reshapedWindowOps {
		select {
		case op := <-s.ops:
			batch = append(batch, op)
		case <-t.C:
			return batch
		case <-s.stop:
			return batch
		}
	}
	return batch
}

func (s *reshapedStore) commit(batch []*reshapedOp, stmts *reshapedStmts) {
	ctx := context.Background()
	results := make([]error, len(batch))
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		for _, op := range batch {
			op.result <- fmt.Errorf("begin: %w", err)
		}
		return
	}
	for i, op := range batch {
		results[i] = runSavepoint(ctx, tx, func() error { return op.fn(ctx, tx, stmts) })
	}
	if err := tx.Commit(); err != nil {
		for i := range results {
			results[i] = cmpErr(results[i], fmt.Errorf("commit: %w", err))
		}
	}
	s.commits.Add(1)
	for i, op := range batch {
		op.result <- results[i]
	}
}

// runSavepoint runs fn in a savepoint, undoing what it wrote when it fails.
func runSavepoint(ctx context.Context, tx *sql.Tx, fn func() error) error {
	if _, err := tx.ExecContext(ctx, "SAVEPOINT op"); err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	opErr := fn()
	if opErr != nil {
		if _, err := tx.ExecContext(ctx, "ROLLBACK TO op"); err != nil {
			return errors.Join(opErr, err)
		}
	}
	if _, err := tx.ExecContext(ctx, "RELEASE op"); err != nil {
		return errors.Join(opErr, err)
	}
	return opErr
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func (s *reshapedStore) Ingest(ctx context.Context, it *dispatch.EventIngestItem) (bool, error) {
	ev := it.Event
	doc, err := ev.Event.MarshalJSON()
	if err != nil {
		return false, fmt.Errorf("encode event %s: %w", ev.ID, err)
	}
	type jobRow struct {
		id      string
		h       jobHeader
		doc     []byte
		history []byte
	}
	type statusRow struct {
		id, subject string
		rec         []byte
	}
	histories := make(map[string][]byte, len(it.Jobs))
	statuses := make([]statusRow, len(it.StatusEvents))
	for i := range it.StatusEvents {
		e := &it.StatusEvents[i]
		rec, err := encodeStatus(e)
		if err != nil {
			return false, err
		}
		statuses[i] = statusRow{id: e.ID, subject: e.Subject, rec: rec}
		histories[e.Subject] = appendHistory(histories[e.Subject], rec)
	}
	jobs := make([]jobRow, len(it.Jobs))
	for i, j := range it.Jobs {
		j.Version = 1
		doc, h, err := encodeJob(j)
		if err != nil {
			return false, err
		}
		jobs[i] = jobRow{id: j.ID, h: h, doc: doc, history: histories[j.ID]}
	}
	dup := false
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx, st *reshapedStmts) error {
		var existing string
		err := tx.StmtContext(ctx, st.dedup).QueryRowContext(ctx, ev.DedupKey).Scan(&existing) //nolint:sqlclosecheck // bound to the transaction, which closes it when it ends
		switch {
		case err == nil:
			dup = true
			return nil
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("look up dedup key: %w", err)
		}
		received := ev.ReceivedAt.UnixMilli()
		if _, err := tx.StmtContext(ctx, st.insertEvent).ExecContext(ctx, ev.ID, ev.DedupKey, received, received, doc); err != nil { //nolint:sqlclosecheck // bound to the transaction, which closes it when it ends
			return fmt.Errorf("insert event: %w", err)
		}
		for _, r := range jobs {
			if _, err := tx.StmtContext(ctx, st.insertJob).ExecContext(ctx, r.id, r.h.status, r.h.due, r.doc, r.history); err != nil { //nolint:sqlclosecheck // bound to the transaction, which closes it when it ends
				return fmt.Errorf("insert job: %w", err)
			}
		}
		for _, r := range statuses {
			if _, err := tx.StmtContext(ctx, st.insertStatus).ExecContext(ctx, r.id, r.subject, r.rec); err != nil { //nolint:sqlclosecheck // bound to the transaction, which closes it when it ends
				return fmt.Errorf("insert status event: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	if dup {
		for _, j := range it.Jobs {
			j.Version = 0
		}
	}
	return dup, nil
}

func (s *reshapedStore) Update(ctx context.Context, j *dispatch.Job, ev stream.Event) error {
	rec, err := encodeStatus(&ev)
	if err != nil {
		return err
	}
	next := *j
	next.Version = j.Version + 1
	doc, h, err := encodeJob(&next)
	if err != nil {
		return err
	}
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx, st *reshapedStmts) error {
		res, err := tx.StmtContext(ctx, st.updateJob).ExecContext(ctx, h.status, h.due, doc, //nolint:sqlclosecheck // bound to the transaction, which closes it when it ends
			appendHistory(nil, rec), j.ID, j.Version)
		if err != nil {
			return fmt.Errorf("update job: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("update job: %w", err)
		}
		if n != 1 {
			return fmt.Errorf("job %s: stored version is not %d", j.ID, j.Version)
		}
		if _, err := tx.StmtContext(ctx, st.insertStatus).ExecContext(ctx, ev.ID, ev.Subject, rec); err != nil { //nolint:sqlclosecheck // bound to the transaction, which closes it when it ends
			return fmt.Errorf("insert status event: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	j.Version++
	return nil
}
