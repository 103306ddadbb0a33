package pebblestore

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/hooklane/hooklane/stream"
)

// OutboxList returns up to limit operational outbox events (the ones
// JobUpdate stored as p.Outbox: discarded jobs' events), oldest id first.
// It makes the Store a dispatch.OutboxStore.
func (s *Store) OutboxList(_ context.Context, limit int) ([]stream.Event, error) {
	limit = limitOr(limit, 100)
	var events []stream.Event
	err := s.read(func(db *pebble.DB) error {
		return scan(db, []byte{pfxOutbox}, []byte{pfxOutbox + 1}, false, func(k, v []byte) (bool, error) {
			e, err := decodeStatus(string(k[1:]), v)
			if err != nil {
				return false, err
			}
			events = append(events, e)
			return len(events) < limit, nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list outbox: %w", err)
	}
	return events, nil
}

// OutboxDelete removes the operational outbox events with the given ids;
// ids not stored are no error.
func (s *Store) OutboxDelete(ctx context.Context, ids []string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	err := s.write(ctx, func(tx *writeTx) error {
		for _, id := range ids {
			if err := tx.del(key(pfxOutbox, id)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete outbox events: %w", err)
	}
	return nil
}
