package sqlitestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/hooklane/hooklane/event/schema"
	"github.com/hooklane/hooklane/store"
)

// eventTypeDocument is the stored form of an event type, without the API's
// MarshalJSON.
type eventTypeDocument schema.EventType

func eventTypeDoc(t *schema.EventType) ([]byte, error) {
	c := *t
	c.CreatedAt = msUTC(c.CreatedAt)
	c.UpdatedAt = msUTC(c.UpdatedAt)
	if c.Versions != nil {
		c.Versions = slices.Clone(c.Versions)
		for i := range c.Versions {
			c.Versions[i].CreatedAt = msUTC(c.Versions[i].CreatedAt)
			c.Versions[i].UpdatedAt = msUTC(c.Versions[i].UpdatedAt)
		}
	}
	b, err := json.Marshal((*eventTypeDocument)(&c))
	if err != nil {
		return nil, fmt.Errorf("encode event type %s: %w", t.Code, err)
	}
	return b, nil
}

func scanEventType(r rowScanner) (*schema.EventType, error) {
	var (
		revision int64
		doc      []byte
	)
	if err := r.Scan(&revision, &doc); err != nil {
		return nil, err
	}
	t := &schema.EventType{}
	if err := json.Unmarshal(doc, (*eventTypeDocument)(t)); err != nil {
		return nil, fmt.Errorf("decode event type: %w", err)
	}
	t.Revision = revision
	return t, nil
}

// EventTypeInsert stores a new type at revision 1 and sets t.Revision to 1;
// store.ErrConflict when the code exists.
func (s *Store) EventTypeInsert(ctx context.Context, t *schema.EventType) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	doc, err := eventTypeDoc(t)
	if err != nil {
		return err
	}
	code, status := t.Code, string(t.Status)
	err = s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO event_types (code, status, revision, doc) VALUES (?, ?, 1, ?)`,
			code, status, doc); err != nil {
			return err
		}
		return bumpGeneration(ctx, tx, "event_types")
	})
	if err != nil {
		return fmt.Errorf("insert event type %s: %w", code, s.translate(err))
	}
	t.Revision = 1
	return nil
}

// EventTypeGet returns one type by code.
func (s *Store) EventTypeGet(ctx context.Context, code string) (*schema.EventType, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	t, err := scanEventType(s.queryRow(ctx, `SELECT revision, doc FROM event_types WHERE code = ?`, code))
	if err != nil {
		return nil, fmt.Errorf("get event type %s: %w", code, s.translate(err))
	}
	return t, nil
}

// EventTypeList returns one page of types ordered by code; the cursor is the
// last code of the previous page.
func (s *Store) EventTypeList(ctx context.Context, p *schema.ListParams) (*schema.Page, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var w where
	if p.Status != "" {
		w.add("status = ?", string(p.Status))
	}
	if p.Prefix != "" {
		w.add("substr(code, 1, length(?)) = ?", p.Prefix, p.Prefix)
	}
	if p.Cursor != "" {
		w.add("code > ?", p.Cursor)
	}
	limit := pageLimit(p.Limit)
	rows, err := s.rdb.QueryContext(ctx, `SELECT revision, doc FROM event_types`+w.sql()+` ORDER BY code LIMIT ?`, //nolint:gosec // G202: w.sql() joins constant fragments; every value is a ? argument
		append(w.args, limit+1)...)
	if err != nil {
		return nil, fmt.Errorf("list event types: %w", s.translate(err))
	}
	defer rows.Close()
	var types []*schema.EventType
	for rows.Next() {
		t, err := scanEventType(rows)
		if err != nil {
			return nil, fmt.Errorf("list event types: %w", s.translate(err))
		}
		types = append(types, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list event types: %w", s.translate(err))
	}
	page := &schema.Page{EventTypes: types}
	if len(types) > limit {
		page.EventTypes = types[:limit]
		page.NextCursor = types[limit-1].Code
	}
	return page, nil
}

// EventTypeUpdate replaces the stored type when its revision is t.Revision
// and then sets t.Revision to the new one; store.ErrConflict when the
// revisions differ, store.ErrNotFound when the type is gone.
func (s *Store) EventTypeUpdate(ctx context.Context, t *schema.EventType) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	doc, err := eventTypeDoc(t)
	if err != nil {
		return err
	}
	code, status, revision := t.Code, string(t.Status), t.Revision
	err = s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		err := execOne(ctx, tx, `UPDATE event_types SET status = ?, doc = ?, revision = revision + 1
			WHERE code = ? AND revision = ?`, status, doc, code, revision)
		if errors.Is(err, store.ErrNotFound) {
			return missingOr(ctx, tx, "event_types", "code", code, fmt.Errorf("%w: stored revision is not %d", store.ErrStale, revision))
		}
		if err != nil {
			return err
		}
		return bumpGeneration(ctx, tx, "event_types")
	})
	if err != nil {
		return fmt.Errorf("update event type %s: %w", code, s.translate(err))
	}
	t.Revision++
	return nil
}

// EventTypeDelete removes a type.
func (s *Store) EventTypeDelete(ctx context.Context, code string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		if err := execOne(ctx, tx, `DELETE FROM event_types WHERE code = ?`, code); err != nil {
			return err
		}
		return bumpGeneration(ctx, tx, "event_types")
	})
	if err != nil {
		return fmt.Errorf("delete event type %s: %w", code, s.translate(err))
	}
	return nil
}

// EventTypeGeneration returns a counter that grows on every write of an
// event type.
func (s *Store) EventTypeGeneration(ctx context.Context) (int64, error) {
	return s.generation(ctx, "event_types")
}
