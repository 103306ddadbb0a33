package pebblestore

import (
	"context"
	"fmt"
)

// EventClearFannedOut unsets the fanned-out marker of events, the state a
// crash between the event write and the fan-out leaves in a store that
// cannot write both at once. Test builds only: with storage/embedded it
// implements storetest.FanOutClearer.
func (s *Store) EventClearFannedOut(ctx context.Context, ids []string) error {
	err := s.write(ctx, func(tx *writeTx) error {
		var recs []*eventRecord
		for _, id := range ids {
			v, err := tx.get(key(pfxEvent, id))
			if err != nil || v == nil {
				return err
			}
			r, err := parseEventRecord(id, v)
			if err != nil {
				return err
			}
			recs = append(recs, r)
		}
		for _, r := range recs {
			r.fannedOutAt = nil
			if err := putEvent(tx, r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("clear fanned-out marker: %w", err)
	}
	return nil
}

// BatchStats returns how many commits the writer ran and how many
// operations they held.
func (s *Store) BatchStats() (batches, ops int64) { return s.batches.Load(), s.batchedOps.Load() }
