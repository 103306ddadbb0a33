package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/cloudevent"
)

const eventColumns = `id, dedup_key, received_at, fanned_out_at, schema_version, doc`

// eventRow is an ingest item encoded for the tables, prepared in the
// caller's goroutine.
type eventRow struct {
	id, dedupKey, typ, source, subject, messageGroup, schemaVersion string
	receivedAt                                                      int64
	fannedOutAt                                                     sql.NullInt64
	doc                                                             []byte
	extNames, extValues                                             []string
	jobs                                                            []*jobRow
	statusEvents                                                    []*statusEventRow
}

func (s *Store) newEventRow(item *dispatch.EventIngestItem, fannedOutAt time.Time) (*eventRow, error) {
	e := item.Event
	doc, err := e.Event.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encode event %s: %w", e.ID, err)
	}
	r := &eventRow{
		id: e.ID, dedupKey: e.DedupKey, typ: e.Event.Type, source: e.Event.Source, subject: e.Event.Subject,
		messageGroup: e.Event.Ext(cloudevent.ExtMessageGroup), schemaVersion: e.SchemaVersion,
		receivedAt: millis(e.ReceivedAt), fannedOutAt: nullMillis(&fannedOutAt), doc: doc,
	}
	for _, name := range slices.Sorted(maps.Keys(e.Event.Extensions)) {
		r.extNames = append(r.extNames, name)
		r.extValues = append(r.extValues, e.Event.Ext(name))
	}
	if r.jobs, err = s.newJobRows(item.Jobs); err != nil {
		return nil, err
	}
	if r.statusEvents, err = newStatusEventRows(item.StatusEvents); err != nil {
		return nil, err
	}
	return r, nil
}

// ingestItem writes one item unless an event with its dedup key is stored;
// it returns the stored event's id when it is a duplicate.
func ingestItem(ctx context.Context, tx *writeTx, r *eventRow) (string, error) {
	var existing string
	err := tx.QueryRowContext(ctx, `SELECT id FROM events WHERE dedup_key = ?`, r.dedupKey).Scan(&existing)
	switch {
	case err == nil:
		return existing, nil
	case !errors.Is(err, sql.ErrNoRows):
		return "", fmt.Errorf("look up dedup key of event %s: %w", r.id, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO events (id, dedup_key, type, source, subject, messagegroup,
		received_at, fanned_out_at, schema_version, doc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.id, r.dedupKey, r.typ, r.source, r.subject, r.messageGroup, r.receivedAt, r.fannedOutAt,
		r.schemaVersion, r.doc); err != nil {
		return "", fmt.Errorf("insert event %s: %w", r.id, err)
	}
	for i, name := range r.extNames {
		if _, err := tx.ExecContext(ctx, `INSERT INTO event_extensions (event_id, name, value) VALUES (?, ?, ?)`,
			r.id, name, r.extValues[i]); err != nil {
			return "", fmt.Errorf("insert extension %s of event %s: %w", name, r.id, err)
		}
	}
	if _, err := insertJobsWithEvents(ctx, tx, r.jobs, r.statusEvents); err != nil {
		return "", err
	}
	return "", nil
}

// EventIngest stores each item that is not a duplicate, in one transaction:
// the event (marked fanned out now), its jobs and its status events.
func (s *Store) EventIngest(ctx context.Context, p *dispatch.EventIngestParams) ([]dispatch.EventIngestResult, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	now := s.nowFunc()
	rows := make([]*eventRow, len(p.Items))
	for i := range p.Items {
		r, err := s.newEventRow(&p.Items[i], now)
		if err != nil {
			return nil, fmt.Errorf("ingest events: %w", err)
		}
		rows[i] = r
	}
	results := make([]dispatch.EventIngestResult, len(rows))
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		for i, r := range rows {
			existing, err := ingestItem(ctx, tx, r)
			if err != nil {
				return err
			}
			results[i] = dispatch.EventIngestResult{Duplicate: existing != "", ExistingID: existing}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ingest events: %w", s.translate(err))
	}
	for i, r := range results {
		if !r.Duplicate {
			for _, j := range p.Items[i].Jobs {
				j.Version = 1
			}
		}
	}
	return results, nil
}

func scanEvent(r rowScanner) (*event.Event, error) {
	var (
		e           event.Event
		received    int64
		fannedOutAt sql.NullInt64
		doc         []byte
	)
	if err := r.Scan(&e.ID, &e.DedupKey, &received, &fannedOutAt, &e.SchemaVersion, &doc); err != nil {
		return nil, err
	}
	e.ReceivedAt = fromMillis(received)
	e.FannedOutAt = fromNullMillis(fannedOutAt)
	if err := json.Unmarshal(doc, &e.Event); err != nil {
		return nil, fmt.Errorf("decode event %s: %w", e.ID, err)
	}
	if !e.Event.Time.IsZero() {
		e.Event.Time = e.Event.Time.UTC()
	}
	return &e, nil
}

// EventGetByID returns one event.
func (s *Store) EventGetByID(ctx context.Context, id string) (*event.Event, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	e, err := scanEvent(s.queryRow(ctx, `SELECT `+eventColumns+` FROM events WHERE id = ?`, id))
	if err != nil {
		return nil, fmt.Errorf("get event %s: %w", id, s.translate(err))
	}
	return e, nil
}

// EventList returns one page of events, highest id first.
func (s *Store) EventList(ctx context.Context, p *event.ListParams) (*event.Page, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var w where
	if p.Type != "" {
		w.add("type = ?", p.Type)
	}
	if p.Source != "" {
		w.add("source = ?", p.Source)
	}
	if p.Subject != "" {
		w.add("subject = ?", p.Subject)
	}
	if p.MessageGroup != "" {
		w.add("messagegroup = ?", p.MessageGroup)
	}
	for _, name := range slices.Sorted(maps.Keys(p.Ext)) {
		w.add(`EXISTS (SELECT 1 FROM event_extensions x WHERE x.event_id = events.id AND x.name = ? AND x.value = ?)`,
			name, p.Ext[name])
	}
	if !p.Since.IsZero() {
		w.add("received_at >= ?", millis(p.Since))
	}
	if !p.Until.IsZero() {
		w.add("received_at < ?", millis(p.Until))
	}
	if p.Cursor != "" {
		w.add("id < ?", p.Cursor)
	}
	limit := pageLimit(p.Limit)
	events, err := s.queryEvents(ctx, `SELECT `+eventColumns+` FROM events`+w.sql()+` ORDER BY id DESC LIMIT ?`,
		append(w.args, limit+1)...)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	page := &event.Page{Events: events}
	if len(events) > limit {
		page.Events = events[:limit]
		page.NextCursor = events[limit-1].ID
	}
	return page, nil
}

// EventListNotFannedOut returns events not marked fanned out received before
// p.ReceivedBefore, oldest first.
func (s *Store) EventListNotFannedOut(ctx context.Context, p *event.ListNotFannedOutParams) ([]*event.Event, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	events, err := s.queryEvents(ctx, `SELECT `+eventColumns+` FROM events
		WHERE fanned_out_at IS NULL AND received_at < ? ORDER BY received_at, id LIMIT ?`,
		millis(p.ReceivedBefore), limitOr(p.Limit, 100))
	if err != nil {
		return nil, fmt.Errorf("list events not fanned out: %w", err)
	}
	return events, nil
}

// EventMarkFannedOut marks the events fanned out at `at`.
func (s *Store) EventMarkFannedOut(ctx context.Context, ids []string, at time.Time) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	var batches [][]any
	for chunk := range slices.Chunk(ids, maxInList) {
		args := make([]any, 0, len(chunk)+1)
		args = append(args, millis(at))
		for _, id := range chunk {
			args = append(args, id)
		}
		batches = append(batches, args)
	}
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		for _, args := range batches {
			if _, err := tx.ExecContext(ctx, `UPDATE events SET fanned_out_at = ? WHERE id IN (`+
				placeholders(len(args)-1)+`)`, args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("mark %d events fanned out: %w", len(ids), s.translate(err))
	}
	return nil
}

// EventDeleteBefore deletes up to limit events received before `before`,
// oldest first.
func (s *Store) EventDeleteBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	var n int64
	const oldest = `SELECT id FROM events WHERE received_at < ? ORDER BY received_at, id LIMIT ?`
	args := []any{millis(before), limitOr(limit, 1000)}
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM event_extensions WHERE event_id IN (`+oldest+`)`, args...); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM events WHERE id IN (`+oldest+`)`, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err //nolint:wrapcheck // wrapped below
	})
	if err != nil {
		return 0, fmt.Errorf("delete events: %w", s.translate(err))
	}
	return int(n), nil
}

func (s *Store) queryEvents(ctx context.Context, query string, args ...any) ([]*event.Event, error) {
	rows, err := s.rdb.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, s.translate(err)
	}
	defer rows.Close()
	var events []*event.Event
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, s.translate(err)
		}
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, s.translate(err)
	}
	return events, nil
}
