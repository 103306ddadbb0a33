package pebblestore

import (
	"context"
	"fmt"

	dto "github.com/prometheus/client_model/go"
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

// BatchStats returns how many commits the writer ran, how many operations
// they held and how many keys they wrote (sets and deletes).
func (s *Store) BatchStats() (batches, ops, keys int64) {
	return s.batches.Load(), s.batchedOps.Load(), s.batchedKeys.Load()
}

// Lookups returns how many point reads the writes made (writeTx.get and
// has): the existence checks and the reads of what a write replaces.
func (s *Store) Lookups() int64 { return s.lookups.Load() }

// WALFsyncs returns how many times Pebble synced its WAL.
func (s *Store) WALFsyncs() (uint64, error) {
	var m dto.Metric
	if err := s.db.Metrics().LogWriter.FsyncLatency.Write(&m); err != nil {
		return 0, fmt.Errorf("read fsync metric: %w", err)
	}
	return m.GetHistogram().GetSampleCount(), nil
}
