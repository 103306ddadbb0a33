package sqlitestore

import (
	"context"
	"fmt"
	"slices"

	"github.com/hooklane/hooklane/dispatch"
)

// The methods of this file let storage/embedded move the data plane
// (events, jobs, status events) out of this store: the in-place upgrade
// copies the rows and then clears the tables, and the status events that
// CircuitUpdate and SubscriptionDisable write here with their change (an
// outbox) are moved and deleted.

// JobListSealedAfter returns up to limit jobs with ids after `after`, in
// id order, as stored: their secrets as they are (sealed or plain, never
// opened) and their versions.
func (s *Store) JobListSealedAfter(ctx context.Context, after string, limit int) ([]*dispatch.Job, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	jobs, err := s.queryJobsSealed(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id > ? ORDER BY id LIMIT ?`, after, limitOr(limit, 500))
	if err != nil {
		return nil, fmt.Errorf("list jobs after %q: %w", after, err)
	}
	return jobs, nil
}

// StatusEventDeleteIDs deletes the status events with the given ids.
func (s *Store) StatusEventDeleteIDs(ctx context.Context, ids []string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	var batches [][]any
	for chunk := range slices.Chunk(ids, maxInList) {
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		batches = append(batches, args)
	}
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		for _, args := range batches {
			if _, err := tx.ExecContext(ctx, `DELETE FROM status_events WHERE id IN (`+placeholders(len(args))+`)`, args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete %d status events: %w", len(ids), s.translate(err))
	}
	return nil
}

// DataPlaneClear deletes every event, job and status event, in one
// transaction: the last step of the upgrade to another data plane, once
// the rows are copied there.
func (s *Store) DataPlaneClear(ctx context.Context) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		for _, table := range []string{"event_extensions", "events", "jobs", "status_events"} {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+table); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("clear data plane: %w", s.translate(err))
	}
	return nil
}
