package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hooklane/hooklane/dispatch/health"
)

// HealthRecord adds buckets to the stored ones and merges the lasts. The
// writer goroutine runs one write at a time, so reading a bucket and writing
// the sum in one write cannot lose a concurrent addition.
func (s *Store) HealthRecord(ctx context.Context, p *health.RecordParams) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		for i := range p.Buckets {
			if err := addBucket(ctx, tx, &p.Buckets[i]); err != nil {
				return err
			}
		}
		for i := range p.Lasts {
			if err := mergeLast(ctx, tx, &p.Lasts[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record health: %w", s.translate(err))
	}
	return nil
}

func addBucket(ctx context.Context, tx *writeTx, b *health.Bucket) error {
	sum := health.Bucket{Latency: make([]int64, len(b.Latency))}
	var raw []byte
	err := tx.QueryRowContext(ctx, `SELECT attempts, succeeded, failed, answered, latency FROM health_minutes
		WHERE subscription_id = ? AND start = ?`, b.SubscriptionID, millis(b.Start)).
		Scan(&sum.Attempts, &sum.Succeeded, &sum.Failed, &sum.Answered, &raw)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return fmt.Errorf("read health bucket: %w", err)
	default:
		if err := json.Unmarshal(raw, &sum.Latency); err != nil {
			return fmt.Errorf("decode health bucket: %w", err)
		}
	}
	sum.Attempts += b.Attempts
	sum.Succeeded += b.Succeeded
	sum.Failed += b.Failed
	sum.Answered += b.Answered
	for i, n := range b.Latency {
		if i >= len(sum.Latency) {
			sum.Latency = append(sum.Latency, 0)
		}
		sum.Latency[i] += n
	}
	latency, err := json.Marshal(sum.Latency)
	if err != nil {
		return fmt.Errorf("encode health bucket: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO health_minutes (subscription_id, start, attempts, succeeded, failed,
		answered, latency) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (subscription_id, start) DO UPDATE SET
		attempts = excluded.attempts, succeeded = excluded.succeeded, failed = excluded.failed,
		answered = excluded.answered, latency = excluded.latency`,
		b.SubscriptionID, millis(b.Start), sum.Attempts, sum.Succeeded, sum.Failed, sum.Answered, latency); err != nil {
		return fmt.Errorf("write health bucket: %w", err)
	}
	return nil
}

func mergeLast(ctx context.Context, tx *writeTx, l *health.Last) error {
	latest := l.LastSuccessAt
	if l.LastFailureAt != nil && (latest == nil || l.LastFailureAt.After(*latest)) {
		latest = l.LastFailureAt
	}
	if latest == nil {
		return nil
	}
	// A later time wins; the last error goes with its failure.
	if _, err := tx.ExecContext(ctx, `INSERT INTO health_last (subscription_id, last_success_at, last_failure_at,
		last_error, latest_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (subscription_id) DO UPDATE SET
		last_success_at = CASE WHEN excluded.last_success_at > coalesce(last_success_at, -1)
			THEN excluded.last_success_at ELSE last_success_at END,
		last_error = CASE WHEN excluded.last_failure_at > coalesce(last_failure_at, -1)
			THEN excluded.last_error ELSE last_error END,
		last_failure_at = CASE WHEN excluded.last_failure_at > coalesce(last_failure_at, -1)
			THEN excluded.last_failure_at ELSE last_failure_at END,
		latest_at = max(latest_at, excluded.latest_at)`,
		l.SubscriptionID, nullMillis(l.LastSuccessAt), nullMillis(l.LastFailureAt), l.LastError, millis(*latest)); err != nil {
		return fmt.Errorf("write health last: %w", err)
	}
	return nil
}

// HealthGet returns a subscription's Last and its buckets since since.
func (s *Store) HealthGet(ctx context.Context, subscriptionID string, since time.Time) (*health.Last, []health.Bucket, error) {
	if err := s.checkOpen(); err != nil {
		return nil, nil, err
	}
	l := &health.Last{SubscriptionID: subscriptionID}
	var success, failure sql.NullInt64
	err := s.queryRow(ctx, `SELECT last_success_at, last_failure_at, last_error FROM health_last WHERE subscription_id = ?`,
		subscriptionID).Scan(&success, &failure, &l.LastError)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		l = nil
	case err != nil:
		return nil, nil, fmt.Errorf("get health of subscription %s: %w", subscriptionID, s.translate(err))
	default:
		l.LastSuccessAt, l.LastFailureAt = fromNullMillis(success), fromNullMillis(failure)
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT start, attempts, succeeded, failed, answered, latency FROM health_minutes
		WHERE subscription_id = ? AND start >= ? ORDER BY start`, subscriptionID, millis(since))
	if err != nil {
		return nil, nil, fmt.Errorf("get health of subscription %s: %w", subscriptionID, s.translate(err))
	}
	defer rows.Close()
	var buckets []health.Bucket
	for rows.Next() {
		b := health.Bucket{SubscriptionID: subscriptionID}
		var start int64
		var raw []byte
		if err := rows.Scan(&start, &b.Attempts, &b.Succeeded, &b.Failed, &b.Answered, &raw); err != nil {
			return nil, nil, fmt.Errorf("get health of subscription %s: %w", subscriptionID, s.translate(err))
		}
		b.Start = fromMillis(start)
		if err := json.Unmarshal(raw, &b.Latency); err != nil {
			return nil, nil, fmt.Errorf("decode health bucket of subscription %s: %w", subscriptionID, err)
		}
		buckets = append(buckets, b)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("get health of subscription %s: %w", subscriptionID, s.translate(err))
	}
	return l, buckets, nil
}

// HealthDeleteBefore deletes old buckets and lasts.
func (s *Store) HealthDeleteBefore(ctx context.Context, p *health.DeleteBeforeParams) (int, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	n := 0
	limit := limitOr(p.Limit, 500)
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		n = 0
		res, err := tx.ExecContext(ctx, `DELETE FROM health_minutes WHERE (subscription_id, start) IN
			(SELECT subscription_id, start FROM health_minutes WHERE start < ? LIMIT ?)`, millis(p.BucketsBefore), limit)
		if err != nil {
			return err
		}
		d, err := res.RowsAffected()
		if err != nil {
			return err //nolint:wrapcheck // wrapped below
		}
		n += int(d)
		res, err = tx.ExecContext(ctx, `DELETE FROM health_last WHERE subscription_id IN (SELECT subscription_id
			FROM health_last WHERE latest_at < ? LIMIT ?)`, millis(p.LastBefore), limit)
		if err != nil {
			return err
		}
		d, err = res.RowsAffected()
		n += int(d)
		return err //nolint:wrapcheck // wrapped below
	})
	if err != nil {
		return 0, fmt.Errorf("delete old health records: %w", s.translate(err))
	}
	return n, nil
}
