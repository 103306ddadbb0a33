package sqlitestore

import (
	"context"
	"fmt"
)

// EventClearFannedOut unsets the fanned-out marker of events, the state a
// crash between the event write and the fan-out leaves in a store that
// cannot write both at once. Test builds only: it implements
// storetest.FanOutClearer.
func (s *Store) EventClearFannedOut(ctx context.Context, ids []string) error {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		_, err := tx.ExecContext(ctx, `UPDATE events SET fanned_out_at = NULL WHERE id IN (`+placeholders(len(ids))+`)`, args...)
		return err
	})
	if err != nil {
		return fmt.Errorf("clear fanned-out marker: %w", err)
	}
	return nil
}

// BatchStats returns how many group-commit transactions the writer ran and
// how many operations they held.
func (s *Store) BatchStats() (batches, ops int64) { return s.batches.Load(), s.batchedOps.Load() }

// Waiting returns how many callers wait to hand an operation to the writer.
func (s *Store) Waiting() int64 { return s.waiting.Load() }

// HoldWriter makes the writer run an operation that waits for release, and
// returns once the writer runs it. The returned channel yields the
// operation's result.
func (s *Store) HoldWriter(ctx context.Context, release <-chan struct{}) <-chan error {
	running := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.write(ctx, func(context.Context, *writeTx) error {
			close(running)
			<-release
			return nil
		})
	}()
	<-running
	return done
}

// WriterSynchronous returns the synchronous setting of the writer's
// connection (PRAGMA synchronous: 1 NORMAL, 2 FULL).
func (s *Store) WriterSynchronous(ctx context.Context) (int, error) {
	var n int
	err := s.wdb.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&n)
	return n, err //nolint:wrapcheck // test helper
}
