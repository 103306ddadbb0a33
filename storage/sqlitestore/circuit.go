package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/stream"
	"github.com/hooklane/hooklane/subscription"
)

const circuitColumns = `subscription_id, state, consecutive_failures, opened_at, next_probe_at, cooldown_ms,
	probe_job_id, probe_until, failing_since, updated_at, version`

func scanCircuit(r rowScanner) (*dispatch.Circuit, error) {
	c := &dispatch.Circuit{}
	var state string
	var opened, nextProbe, probeUntil, failingSince sql.NullInt64
	var cooldown, updated int64
	if err := r.Scan(&c.SubscriptionID, &state, &c.ConsecutiveFailures, &opened, &nextProbe, &cooldown,
		&c.ProbeJobID, &probeUntil, &failingSince, &updated, &c.Version); err != nil {
		return nil, err
	}
	c.State = dispatch.CircuitState(state)
	c.OpenedAt, c.NextProbeAt = fromNullMillis(opened), fromNullMillis(nextProbe)
	c.ProbeUntil, c.FailingSince = fromNullMillis(probeUntil), fromNullMillis(failingSince)
	c.Cooldown = time.Duration(cooldown) * time.Millisecond
	c.UpdatedAt = fromMillis(updated)
	return c, nil
}

// CircuitGet returns a subscription's circuit; store.ErrNotFound when none
// is stored.
func (s *Store) CircuitGet(ctx context.Context, subscriptionID string) (*dispatch.Circuit, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	c, err := scanCircuit(s.queryRow(ctx, `SELECT `+circuitColumns+` FROM circuits WHERE subscription_id = ?`, subscriptionID))
	if err != nil {
		return nil, fmt.Errorf("get circuit of subscription %s: %w", subscriptionID, s.translate(err))
	}
	return c, nil
}

// CircuitGetMany returns the stored circuits of the given subscriptions.
func (s *Store) CircuitGetMany(ctx context.Context, subscriptionIDs []string) ([]*dispatch.Circuit, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if len(subscriptionIDs) == 0 {
		return nil, nil
	}
	args := make([]any, len(subscriptionIDs))
	for i, id := range subscriptionIDs {
		args[i] = id
	}
	cs, err := s.queryCircuits(ctx, `SELECT `+circuitColumns+` FROM circuits WHERE subscription_id IN (`+
		placeholders(len(args))+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("get circuits: %w", err)
	}
	return cs, nil
}

// CircuitListNotClosed returns up to limit circuits that are not CLOSED,
// earliest OpenedAt first.
func (s *Store) CircuitListNotClosed(ctx context.Context, limit int) ([]*dispatch.Circuit, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	cs, err := s.queryCircuits(ctx, `SELECT `+circuitColumns+` FROM circuits WHERE state <> 'CLOSED'
		ORDER BY opened_at, subscription_id LIMIT ?`, limitOr(limit, 100))
	if err != nil {
		return nil, fmt.Errorf("list circuits not closed: %w", err)
	}
	return cs, nil
}

// CircuitUpdate writes p.Circuit when the stored version is
// p.Circuit.Version (0: none stored, inserted), with its status events.
func (s *Store) CircuitUpdate(ctx context.Context, p *dispatch.CircuitUpdateParams) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	c := p.Circuit
	events, err := newStatusEventRows(p.Events)
	if err != nil {
		return fmt.Errorf("update circuit of subscription %s: %w", c.SubscriptionID, err)
	}
	outbox, err := newStatusEventRows(p.Outbox)
	if err != nil {
		return fmt.Errorf("update circuit of subscription %s: %w", c.SubscriptionID, err)
	}
	cols := []any{
		string(c.State), c.ConsecutiveFailures, nullMillis(c.OpenedAt), nullMillis(c.NextProbeAt), c.Cooldown.Milliseconds(),
		c.ProbeJobID, nullMillis(c.ProbeUntil), nullMillis(c.FailingSince), millis(c.UpdatedAt),
	}
	err = s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		if c.Version == 0 {
			res, err := tx.ExecContext(ctx, `INSERT INTO circuits (`+circuitColumns+`)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1) ON CONFLICT (subscription_id) DO NOTHING`,
				append([]any{c.SubscriptionID}, cols...)...)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n == 0 {
				return errors.Join(err, fmt.Errorf("%w: a circuit is stored already", store.ErrConflict))
			}
		} else {
			res, err := tx.ExecContext(ctx, `UPDATE circuits SET state = ?, consecutive_failures = ?, opened_at = ?,
				next_probe_at = ?, cooldown_ms = ?, probe_job_id = ?, probe_until = ?, failing_since = ?, updated_at = ?,
				version = version + 1 WHERE subscription_id = ? AND version = ?`,
				append(cols, c.SubscriptionID, c.Version)...)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n == 0 {
				return errors.Join(err, fmt.Errorf("%w: stored version is not %d", store.ErrStale, c.Version))
			}
		}
		for _, e := range events {
			if err := insertStatusEvent(ctx, tx, e); err != nil {
				return err
			}
		}
		return insertOutbox(ctx, tx, outbox)
	})
	if err != nil {
		return fmt.Errorf("update circuit of subscription %s: %w", c.SubscriptionID, s.translate(err))
	}
	c.Version++
	return nil
}

// CircuitDelete removes a subscription's circuit.
func (s *Store) CircuitDelete(ctx context.Context, subscriptionID string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM circuits WHERE subscription_id = ?`, subscriptionID)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete circuit of subscription %s: %w", subscriptionID, s.translate(err))
	}
	return nil
}

// SubscriptionDisable pauses an ACTIVE subscription with a status reason.
func (s *Store) SubscriptionDisable(ctx context.Context, p *dispatch.SubscriptionDisableParams) (bool, error) {
	if err := s.checkOpen(); err != nil {
		return false, err
	}
	events, err := newStatusEventRows(p.Events)
	if err != nil {
		return false, fmt.Errorf("disable subscription %s: %w", p.SubscriptionID, err)
	}
	outbox, err := newStatusEventRows(p.Outbox)
	if err != nil {
		return false, fmt.Errorf("disable subscription %s: %w", p.SubscriptionID, err)
	}
	changed := false
	err = s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		changed = false
		// The document keeps status and updatedAt as its JSON (time.Time's
		// RFC 3339 form), which json_set rewrites in place.
		res, err := tx.ExecContext(ctx, `UPDATE subscriptions SET status = ?, status_reason = ?, version = version + 1,
			doc = json_set(doc, '$.status', ?, '$.updatedAt', ?) WHERE id = ? AND status = ?`,
			string(subscription.StatusPaused), p.Reason, string(subscription.StatusPaused),
			msUTC(p.At).Format(time.RFC3339Nano), p.SubscriptionID, string(subscription.StatusActive))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err //nolint:wrapcheck // wrapped below
		}
		if n == 0 {
			return missingOr(ctx, tx, "subscriptions", "id", p.SubscriptionID, nil)
		}
		changed = true
		for _, e := range events {
			if err := insertStatusEvent(ctx, tx, e); err != nil {
				return err
			}
		}
		if err := insertOutbox(ctx, tx, outbox); err != nil {
			return err
		}
		return bumpGeneration(ctx, tx, "subscriptions")
	})
	if err != nil {
		return false, fmt.Errorf("disable subscription %s: %w", p.SubscriptionID, s.translate(err))
	}
	return changed, nil
}

// insertOutbox stores operational outbox rows in the transaction of the
// write that causes them, skipping stored ids.
func insertOutbox(ctx context.Context, tx *writeTx, rows []*statusEventRow) error {
	for _, r := range rows {
		if _, err := tx.ExecContext(ctx, `INSERT INTO operational_outbox (id, type, time, subject, data)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`, r.id, r.typ, r.time, r.subject, r.data); err != nil {
			return fmt.Errorf("insert outbox event %s: %w", r.id, err)
		}
	}
	return nil
}

// OutboxList returns up to limit operational outbox events, oldest first.
func (s *Store) OutboxList(ctx context.Context, limit int) ([]stream.Event, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	events, err := s.queryStatusEvents(ctx, `SELECT id, type, time, subject, data FROM operational_outbox
		ORDER BY id LIMIT ?`, limitOr(limit, 100))
	if err != nil {
		return nil, fmt.Errorf("list outbox: %w", err)
	}
	return events, nil
}

// OutboxDelete removes the operational outbox events with the given ids.
func (s *Store) OutboxDelete(ctx context.Context, ids []string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM operational_outbox WHERE id IN (`+placeholders(len(args))+`)`, args...)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete outbox events: %w", s.translate(err))
	}
	return nil
}

func (s *Store) queryCircuits(ctx context.Context, query string, args ...any) ([]*dispatch.Circuit, error) {
	rows, err := s.rdb.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, s.translate(err)
	}
	defer rows.Close()
	var cs []*dispatch.Circuit
	for rows.Next() {
		c, err := scanCircuit(rows)
		if err != nil {
			return nil, s.translate(err)
		}
		cs = append(cs, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.translate(err)
	}
	return cs, nil
}
