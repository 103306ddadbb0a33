package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/hooklane/hooklane/store"
)

// writeOp is one write operation for the writer goroutine.
type writeOp struct {
	ctx context.Context //nolint:containedctx // the caller's ctx travels with its operation to the writer goroutine, which checks it before running fn
	// handoff decides between the writer taking the write and the caller
	// abandoning it (see store.Handoff).
	handoff store.Handoff
	fn      func(ctx context.Context, tx *writeTx) error
	done    chan error // buffered: the writer never blocks on it
}

// write runs fn in the writer goroutine, inside a savepoint of a group-commit
// transaction, and returns its error, or the commit's. fn must not keep tx
// and must not touch the caller's values: the caller applies what a write
// changes on its values only after write returns nil.
func (s *Store) write(ctx context.Context, fn func(ctx context.Context, tx *writeTx) error) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	op := &writeOp{ctx: ctx, fn: fn, done: make(chan error, 1)}
	s.waiting.Add(1)
	select {
	case s.ops <- op:
		s.waiting.Add(-1)
	case <-s.stop:
		s.waiting.Add(-1)
		return s.checkOpen()
	case <-ctx.Done():
		s.waiting.Add(-1)
		return ctx.Err()
	}
	return op.handoff.Await(ctx, op.done)
}

// commitWindowOps is the size of a transaction that commits without
// waiting out the commit window: from eight operations on, a commit's
// cost is already shared well.
const commitWindowOps = 8

// runWriter is the writer goroutine: it takes one operation, then every
// operation already waiting (up to MaxBatch), and, when writes are
// concurrent (it found more than one, or the last commit held more than
// one) while they are fewer than commitWindowOps, those that arrive within
// the commit window after the first; then it commits them together. A
// write that comes alone after a lone one commits at once: at low rates
// nothing would share its commit (a delivery's own writes follow each
// other), and waiting would only add latency.
func (s *Store) runWriter() {
	defer close(s.writerDone)
	stmts := make(map[string]*sql.Stmt)
	defer func() {
		for _, st := range stmts {
			_ = st.Close()
		}
	}()
	batch := make([]*writeOp, 0, MaxBatch)
	prev := 0 // the operations of the last commit
	for {
		select {
		case <-s.stop:
			return
		case op := <-s.ops:
			batch = append(batch[:0], op)
		}
	drain:
		for len(batch) < MaxBatch {
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
		s.commitBatch(batch, stmts)
		prev = len(batch)
		clear(batch)
	}
}

// gather adds to batch the operations that arrive within the commit window
// after its first, until it holds commitWindowOps, or the store closes. At
// moderate rates a commit (its WAL pages, its fsync) is most of a write's
// cost: waiting a fraction of a millisecond lets the claims, outcomes and
// ingests of concurrent deliveries share one.
func (s *Store) gather(batch []*writeOp) []*writeOp {
	if s.commitWindow <= 0 || len(batch) >= commitWindowOps {
		return batch
	}
	t := time.NewTimer(s.commitWindow)
	defer t.Stop()
	for len(batch) < commitWindowOps {
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

// commitBatch runs the operations in one transaction, each in a savepoint,
// and reports every operation's outcome once the transaction is committed.
func (s *Store) commitBatch(batch []*writeOp, stmts map[string]*sql.Stmt) {
	// The writer's statements do not use the callers' contexts: cancelling
	// one caller must not interrupt the statements of the others.
	ctx := context.Background()
	results := make([]error, len(batch))
	sqlTx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		err = fmt.Errorf("begin write transaction: %w", s.translate(err))
		for _, op := range batch {
			op.done <- err
		}
		return
	}
	tx := &writeTx{tx: sqlTx, stmts: stmts, pending: make(map[string]bool)}
	defer s.prepareStmts(ctx, tx)
	for i, op := range batch {
		if err := op.handoff.Take(op.ctx); err != nil {
			results[i] = err
			continue
		}
		results[i] = s.runOp(ctx, tx, op)
	}
	s.batches.Add(1)
	s.batchedOps.Add(int64(len(batch)))
	if err := sqlTx.Commit(); err != nil {
		s.logger.ErrorContext(ctx, "commit write batch", "ops", len(batch), "error", err)
		err = fmt.Errorf("commit write transaction: %w", s.translate(err))
		for i := range results {
			if results[i] == nil {
				results[i] = err
			}
		}
	}
	for i, op := range batch {
		op.done <- results[i]
	}
}

// runOp runs one operation inside its own savepoint: on error everything it
// wrote is rolled back and the transaction goes on with the next operation.
func (s *Store) runOp(ctx context.Context, tx *writeTx, op *writeOp) error {
	if _, err := tx.ExecContext(ctx, "SAVEPOINT op"); err != nil {
		return fmt.Errorf("open savepoint: %w", s.translate(err))
	}
	opErr := op.fn(ctx, tx)
	if opErr != nil {
		if _, err := tx.ExecContext(ctx, "ROLLBACK TO op"); err != nil {
			return fmt.Errorf("roll back savepoint: %w (after %w)", s.translate(err), opErr)
		}
	}
	if _, err := tx.ExecContext(ctx, "RELEASE op"); err != nil {
		return fmt.Errorf("release savepoint: %w", s.translate(err))
	}
	return opErr
}

// maxCachedStmts bounds the writer's prepared statements; statements with
// IN lists of varying length are prepared afresh once the cache is full.
const maxCachedStmts = 128

// writeTx is the group-commit transaction as operations see it. It runs
// statements through prepared statements kept across transactions: parsing
// and planning cost more than executing most of these statements. A
// statement first seen inside a transaction is prepared for that
// transaction only, and for good once the connection is free again (the
// single writer connection is busy with the transaction until then). Only
// the writer goroutine uses it.
type writeTx struct {
	tx      *sql.Tx
	stmts   map[string]*sql.Stmt
	pending map[string]bool
}

// stmt returns the statement for query bound to the transaction.
func (t *writeTx) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := t.stmts[query]; ok {
		return t.tx.StmtContext(ctx, st), nil
	}
	if len(t.stmts)+len(t.pending) < maxCachedStmts {
		t.pending[query] = true
	}
	return t.tx.PrepareContext(ctx, query) //nolint:wrapcheck // wrapped by the operation
}

// prepareStmts prepares the queries first seen in the last transaction, for
// the next ones.
func (s *Store) prepareStmts(ctx context.Context, t *writeTx) {
	for q := range t.pending {
		st, err := s.wdb.PrepareContext(ctx, q) //nolint:sqlclosecheck // cached for the next transactions, closed with the store
		if err != nil {
			s.logger.WarnContext(ctx, "prepare statement", "error", err)
			continue
		}
		t.stmts[q] = st
	}
}

// ExecContext runs a statement in the transaction.
func (t *writeTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := t.stmt(ctx, query) //nolint:sqlclosecheck // bound to the transaction, which closes it when it ends
	if err != nil {
		return nil, err
	}
	// Statements of the transaction are closed when it ends.
	return st.ExecContext(ctx, args...) //nolint:wrapcheck // wrapped by the operation
}

// QueryRowContext runs a query expected to return at most one row.
func (t *writeTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := t.stmt(ctx, query) //nolint:sqlclosecheck // bound to the transaction, which closes it when it ends
	if err != nil {
		// Let Scan report the error, as *sql.Tx does.
		return t.tx.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}
