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
		return err //nolint:wrapcheck // wrapped below
	})
	if err != nil {
		return fmt.Errorf("clear fanned-out marker: %w", err)
	}
	return nil
}
