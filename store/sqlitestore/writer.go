package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
)

// writeOp is one write operation for the writer goroutine.
type writeOp struct {
	ctx  context.Context
	fn   func(ctx context.Context, tx *sql.Tx) error
	done chan error // buffered: the writer never blocks on it
}

// write runs fn in the writer goroutine, inside a savepoint of a group-commit
// transaction, and returns its error, or the commit's. fn must not keep tx
// and must not touch the caller's values: the caller applies what a write
// changes on its values only after write returns nil.
func (s *Store) write(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	op := &writeOp{ctx: ctx, fn: fn, done: make(chan error, 1)}
	select {
	case s.ops <- op:
	case <-s.stop:
		return s.checkOpen()
	case <-ctx.Done():
		return ctx.Err() //nolint:wrapcheck // the caller's own ctx error
	}
	select {
	case err := <-op.done:
		return err
	case <-ctx.Done():
		return ctx.Err() //nolint:wrapcheck // the caller's own ctx error
	}
}

// runWriter is the writer goroutine: it takes one operation, then every
// operation already waiting (up to MaxBatch), and commits them together.
func (s *Store) runWriter() {
	defer close(s.writerDone)
	batch := make([]*writeOp, 0, MaxBatch)
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
		s.commitBatch(batch)
		clear(batch)
	}
}

// commitBatch runs the operations in one transaction, each in a savepoint,
// and reports every operation's outcome once the transaction is committed.
func (s *Store) commitBatch(batch []*writeOp) {
	// The writer's statements do not use the callers' contexts: cancelling
	// one caller must not interrupt the statements of the others.
	ctx := context.Background()
	results := make([]error, len(batch))
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		err = fmt.Errorf("begin write transaction: %w", s.translate(err))
		for _, op := range batch {
			op.done <- err
		}
		return
	}
	for i, op := range batch {
		if err := op.ctx.Err(); err != nil {
			results[i] = err
			continue
		}
		results[i] = s.runOp(ctx, tx, op)
	}
	if err := tx.Commit(); err != nil {
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
func (s *Store) runOp(ctx context.Context, tx *sql.Tx, op *writeOp) error {
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
