package sqlitestore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/subscription/replay"
)

// replayDocument is the stored form of a replay (its API form hides the
// checkpoint and the lease).
type replayDocument struct {
	ID              string        `json:"id"`
	SubscriptionID  string        `json:"subscriptionId"`
	Subscription    string        `json:"subscription"`
	ClientID        *string       `json:"clientId"`
	Status          replay.Status `json:"status"`
	Since           time.Time     `json:"since"`
	Until           time.Time     `json:"until"`
	EventTypes      []string      `json:"eventTypes"`
	Redeliver       bool          `json:"redeliver"`
	Scanned         int64         `json:"scanned"`
	Matched         int64         `json:"matched"`
	Created         int64         `json:"created"`
	Error           string        `json:"error"`
	CreatedAt       time.Time     `json:"createdAt"`
	UpdatedAt       time.Time     `json:"updatedAt"`
	CompletedAt     *time.Time    `json:"completedAt"`
	AfterReceivedAt time.Time     `json:"afterReceivedAt"`
	AfterID         string        `json:"afterId"`
	Owner           string        `json:"owner"`
	LeaseExpiresAt  *time.Time    `json:"leaseExpiresAt"`
}

func replayDoc(r *replay.Replay) ([]byte, error) {
	d := replayDocument{
		ID: r.ID, SubscriptionID: r.SubscriptionID, Subscription: r.Subscription, ClientID: r.ClientID,
		Status: r.Status, Since: msUTC(r.Since), Until: msUTC(r.Until), EventTypes: r.EventTypes,
		Redeliver: r.Redeliver, Scanned: r.Scanned, Matched: r.Matched, Created: r.Created, Error: r.Error,
		CreatedAt: msUTC(r.CreatedAt), UpdatedAt: msUTC(r.UpdatedAt), CompletedAt: msUTCPtr(r.CompletedAt),
		AfterReceivedAt: msUTC(r.AfterReceivedAt), AfterID: r.AfterID, Owner: r.Owner,
		LeaseExpiresAt: msUTCPtr(r.LeaseExpiresAt),
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encode replay %s: %w", r.ID, err)
	}
	return b, nil
}

func scanReplay(r rowScanner) (*replay.Replay, error) {
	var (
		doc     []byte
		version int64
	)
	if err := r.Scan(&version, &doc); err != nil {
		return nil, err
	}
	var d replayDocument
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("decode replay: %w", err)
	}
	return &replay.Replay{
		ID: d.ID, SubscriptionID: d.SubscriptionID, Subscription: d.Subscription, ClientID: d.ClientID,
		Status: d.Status, Since: msUTC(d.Since), Until: msUTC(d.Until), EventTypes: d.EventTypes,
		Redeliver: d.Redeliver, Scanned: d.Scanned, Matched: d.Matched, Created: d.Created, Error: d.Error,
		CreatedAt: msUTC(d.CreatedAt), UpdatedAt: msUTC(d.UpdatedAt), CompletedAt: msUTCPtr(d.CompletedAt),
		AfterReceivedAt: msUTC(d.AfterReceivedAt), AfterID: d.AfterID, Owner: d.Owner,
		LeaseExpiresAt: msUTCPtr(d.LeaseExpiresAt), Version: version,
	}, nil
}

// ReplayInsert stores a new replay at version 1.
func (s *Store) ReplayInsert(ctx context.Context, r *replay.Replay) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	doc, err := replayDoc(r)
	if err != nil {
		return err
	}
	id, sub, status, lease := r.ID, r.SubscriptionID, string(r.Status), nullMillis(r.LeaseExpiresAt)
	err = s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO replays (id, subscription_id, status, lease_expires_at, version, doc)
			VALUES (?, ?, ?, ?, 1, ?)`, id, sub, status, lease, doc)
		return err
	})
	if err != nil {
		return fmt.Errorf("insert replay %s: %w", id, s.translate(err))
	}
	r.Version = 1
	return nil
}

// ReplayGetByID returns one replay.
func (s *Store) ReplayGetByID(ctx context.Context, id string) (*replay.Replay, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	r, err := scanReplay(s.queryRow(ctx, `SELECT version, doc FROM replays WHERE id = ?`, id))
	if err != nil {
		return nil, fmt.Errorf("get replay %s: %w", id, s.translate(err))
	}
	return r, nil
}

// ReplayList returns one page of replays, highest id first.
func (s *Store) ReplayList(ctx context.Context, p *replay.ListParams) (*replay.Page, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var w where
	if p.SubscriptionID != "" {
		w.add("subscription_id = ?", p.SubscriptionID)
	}
	if p.Cursor != "" {
		w.add("id < ?", p.Cursor)
	}
	limit := pageLimit(p.Limit)
	rs, err := s.queryReplays(ctx, `SELECT version, doc FROM replays`+w.sql()+` ORDER BY id DESC LIMIT ?`,
		append(w.args, limit+1)...)
	if err != nil {
		return nil, fmt.Errorf("list replays: %w", err)
	}
	page := &replay.Page{Replays: rs}
	if len(rs) > limit {
		page.Replays = rs[:limit]
		page.NextCursor = rs[limit-1].ID
	}
	return page, nil
}

// ReplayListClaimable returns RUNNING replays whose lease is free or
// expired at p.Now, oldest first.
func (s *Store) ReplayListClaimable(ctx context.Context, p *replay.ListClaimableParams) ([]*replay.Replay, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	rs, err := s.queryReplays(ctx, `SELECT version, doc FROM replays
		WHERE status = 'RUNNING' AND (lease_expires_at IS NULL OR lease_expires_at <= ?) ORDER BY id LIMIT ?`,
		millis(p.Now), limitOr(p.Limit, 10))
	if err != nil {
		return nil, fmt.Errorf("list claimable replays: %w", err)
	}
	return rs, nil
}

// ReplayUpdate replaces the stored replay when its version is r.Version.
func (s *Store) ReplayUpdate(ctx context.Context, r *replay.Replay) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	doc, err := replayDoc(r)
	if err != nil {
		return err
	}
	id, status, lease, version := r.ID, string(r.Status), nullMillis(r.LeaseExpiresAt), r.Version
	err = s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		res, err := tx.ExecContext(ctx, `UPDATE replays SET status = ?, lease_expires_at = ?, version = version + 1, doc = ?
			WHERE id = ? AND version = ?`, status, lease, doc, id, version)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err //nolint:wrapcheck // wrapped below
		}
		if n == 1 {
			return nil
		}
		return missingOr(ctx, tx, "replays", "id", id, store.ErrStale)
	})
	if err != nil {
		return fmt.Errorf("update replay %s at version %d: %w", id, version, s.translate(err))
	}
	r.Version = version + 1
	return nil
}

func (s *Store) queryReplays(ctx context.Context, query string, args ...any) ([]*replay.Replay, error) {
	rows, err := s.rdb.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, s.translate(err)
	}
	defer rows.Close()
	var out []*replay.Replay
	for rows.Next() {
		r, err := scanReplay(rows)
		if err != nil {
			return nil, s.translate(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.translate(err)
	}
	return out, nil
}

// EventListReceived returns a page of events in (received_at, id) order
// after the given position (index events_received_at_id).
func (s *Store) EventListReceived(ctx context.Context, p *event.ListReceivedParams) ([]*event.Event, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var (
		query string
		args  []any
	)
	limit := limitOr(p.Limit, 500)
	if p.AfterID == "" {
		query = `SELECT ` + eventColumns + ` FROM events WHERE received_at >= ? AND received_at < ?
			ORDER BY received_at, id LIMIT ?`
		args = []any{millis(p.Since), millis(p.Until), limit}
	} else {
		// The row-value comparison walks the (received_at, id) index from
		// the position on.
		query = `SELECT ` + eventColumns + ` FROM events WHERE (received_at, id) > (?, ?) AND received_at < ?
			ORDER BY received_at, id LIMIT ?`
		args = []any{millis(p.AfterReceivedAt), p.AfterID, millis(p.Until), limit}
	}
	events, err := s.queryEvents(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list events by receivedAt: %w", err)
	}
	return events, nil
}

// JobCountUnfinished counts a subscription's PENDING, QUEUED and
// IN_PROGRESS jobs, at most p.Limit.
func (s *Store) JobCountUnfinished(ctx context.Context, p *replay.JobCountUnfinishedParams) (int, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	var n int
	err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM jobs
		WHERE subscription_id = ? AND status IN ('PENDING', 'QUEUED', 'IN_PROGRESS') LIMIT ?)`,
		p.SubscriptionID, max(p.Limit, 1)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count unfinished jobs of %s: %w", p.SubscriptionID, s.translate(err))
	}
	return n, nil
}
