package sqlitestore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hooklane/hooklane/stream"
)

// statusEventRow is a status event encoded for the status_events table.
type statusEventRow struct {
	id, typ, subject string
	time             int64
	data             []byte
}

func newStatusEventRows(events []stream.Event) ([]*statusEventRow, error) {
	rows := make([]*statusEventRow, len(events))
	for i := range events {
		e := &events[i]
		data, err := json.Marshal(e.Data)
		if err != nil {
			return nil, fmt.Errorf("encode status event %s: %w", e.ID, err)
		}
		rows[i] = &statusEventRow{id: e.ID, typ: e.Type, subject: e.Subject, time: millis(e.Time), data: data}
	}
	return rows, nil
}

// insertStatusEvent stores a status event unless its id is stored.
func insertStatusEvent(ctx context.Context, tx *writeTx, r *statusEventRow) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO status_events (id, type, time, subject, data)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`, r.id, r.typ, r.time, r.subject, r.data); err != nil {
		return fmt.Errorf("insert status event %s: %w", r.id, err)
	}
	return nil
}

// StatusEventInsertMany stores status events, skipping stored ids.
func (s *Store) StatusEventInsertMany(ctx context.Context, events []stream.Event) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	rows, err := newStatusEventRows(events)
	if err != nil {
		return fmt.Errorf("insert status events: %w", err)
	}
	err = s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		for _, r := range rows {
			if err := insertStatusEvent(ctx, tx, r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("insert status events: %w", s.translate(err))
	}
	return nil
}

// StatusEventListAfter returns status events in ascending id after p.AfterID
// and at or after p.Since.
func (s *Store) StatusEventListAfter(ctx context.Context, p *stream.ListAfterParams) ([]stream.Event, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var w where
	if p.AfterID != "" {
		w.add("id > ?", p.AfterID)
	}
	if !p.Since.IsZero() {
		w.add("time >= ?", millis(p.Since))
	}
	events, err := s.queryStatusEvents(ctx, `SELECT id, type, time, subject, data FROM status_events`+w.sql()+
		` ORDER BY id LIMIT ?`, append(w.args, limitOr(p.Limit, 100))...)
	if err != nil {
		return nil, fmt.Errorf("list status events: %w", err)
	}
	return events, nil
}

// StatusEventListBySubject returns the status events of one job or event in
// ascending id.
func (s *Store) StatusEventListBySubject(ctx context.Context, subject string) ([]stream.Event, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	events, err := s.queryStatusEvents(ctx, `SELECT id, type, time, subject, data FROM status_events
		WHERE subject = ? ORDER BY id`, subject)
	if err != nil {
		return nil, fmt.Errorf("list status events of %s: %w", subject, err)
	}
	return events, nil
}

// StatusEventDeleteBefore deletes up to limit status events older than
// before.
func (s *Store) StatusEventDeleteBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	var n int64
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM status_events WHERE id IN
			(SELECT id FROM status_events WHERE time < ? ORDER BY time LIMIT ?)`, millis(before), limitOr(limit, 1000))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err //nolint:wrapcheck // wrapped below
	})
	if err != nil {
		return 0, fmt.Errorf("delete status events: %w", s.translate(err))
	}
	return int(n), nil
}

func (s *Store) queryStatusEvents(ctx context.Context, query string, args ...any) ([]stream.Event, error) {
	rows, err := s.rdb.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, s.translate(err)
	}
	defer rows.Close()
	var events []stream.Event
	for rows.Next() {
		var (
			e    stream.Event
			ms   int64
			data []byte
		)
		if err := rows.Scan(&e.ID, &e.Type, &ms, &e.Subject, &data); err != nil {
			return nil, s.translate(err)
		}
		e.Time = fromMillis(ms)
		if err := json.Unmarshal(data, &e.Data); err != nil {
			return nil, fmt.Errorf("decode status event %s: %w", e.ID, err)
		}
		if e.Data.NextAttemptAt != nil {
			e.Data.NextAttemptAt = msUTCPtr(e.Data.NextAttemptAt)
		}
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, s.translate(err)
	}
	return events, nil
}
