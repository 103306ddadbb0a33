package pebblestore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/hooklane/hooklane/stream"
)

// statusRecord is a status event as stored: its type, time and subject,
// then its data as JSON.
type statusRecord struct {
	id, typ, subject string
	time             int64
	data             []byte
}

func newStatusRecords(events []stream.Event) ([]*statusRecord, error) {
	out := make([]*statusRecord, len(events))
	for i := range events {
		e := &events[i]
		data, err := json.Marshal(e.Data)
		if err != nil {
			return nil, fmt.Errorf("encode status event %s: %w", e.ID, err)
		}
		out[i] = &statusRecord{id: e.ID, typ: e.Type, subject: e.Subject, time: e.Time.UnixMilli(), data: data}
	}
	return out, nil
}

func (r *statusRecord) value() []byte {
	e := enc{b: make([]byte, 0, 48+len(r.data))}
	e.str(r.typ)
	e.i64(r.time)
	e.str(r.subject)
	e.bytes(r.data)
	return e.b
}

// decodeStatus decodes a status event's value.
func decodeStatus(id string, v []byte) (stream.Event, error) {
	d := dec{b: v}
	e := stream.Event{ID: id, Type: d.str(), Time: d.time(), Subject: d.str()}
	data := d.raw()
	if d.err != nil {
		return e, fmt.Errorf("decode status event %s: %w", id, d.err)
	}
	if err := json.Unmarshal(data, &e.Data); err != nil {
		return e, fmt.Errorf("decode status event %s: %w", id, err)
	}
	e.Data.NextAttemptAt = msUTCPtr(e.Data.NextAttemptAt)
	return e, nil
}

// uniqueStatus returns events without those whose id is repeated earlier
// in events. It looks nothing up: for writes whose own condition (a
// version check, a dedup key, a job not stored yet) guarantees that the
// ids, minted for them, are not stored.
func uniqueStatus(events []*statusRecord) []*statusRecord {
	if len(events) < 2 {
		return events
	}
	out := make([]*statusRecord, 0, len(events))
	seen := make(map[string]bool, len(events))
	for _, e := range events {
		if !seen[e.id] {
			seen[e.id] = true
			out = append(out, e)
		}
	}
	return out
}

// freshStatus returns the events whose ids are not stored (nor repeated
// earlier in events): one lookup per event, for writes nothing else
// guards (StatusEventInsertMany).
func freshStatus(tx *writeTx, events []*statusRecord) ([]*statusRecord, error) {
	out := make([]*statusRecord, 0, len(events))
	seen := make(map[string]bool, len(events))
	for _, e := range events {
		if seen[e.id] {
			continue
		}
		seen[e.id] = true
		ok, err := tx.has(key(pfxStatus, e.id))
		if err != nil {
			return nil, err
		}
		if !ok {
			out = append(out, e)
		}
	}
	return out, nil
}

// putStatus writes a status event and its index entries.
func putStatus(tx *writeTx, r *statusRecord) error {
	if err := tx.set(key(pfxStatus, r.id), r.value()); err != nil {
		return err
	}
	if err := tx.set(key(pfxStatusByID, r.subject, r.id), nil); err != nil {
		return err
	}
	return tx.set(key(pfxStatusTime, r.time, r.id), nil)
}

// StatusEventInsertMany stores status events, skipping stored ids.
func (s *Store) StatusEventInsertMany(ctx context.Context, events []stream.Event) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	recs, err := newStatusRecords(events)
	if err != nil {
		return fmt.Errorf("insert status events: %w", err)
	}
	err = s.write(ctx, func(tx *writeTx) error {
		fresh, err := freshStatus(tx, recs)
		if err != nil {
			return err
		}
		for _, r := range fresh {
			if err := putStatus(tx, r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("insert status events: %w", err)
	}
	return nil
}

// StatusEventListAfter returns status events in ascending id after p.AfterID
// and at or after p.Since.
func (s *Store) StatusEventListAfter(_ context.Context, p *stream.ListAfterParams) ([]stream.Event, error) {
	limit := limitOr(p.Limit, 100)
	since := p.Since.UnixMilli()
	var events []stream.Event
	err := s.read(func(db *pebble.DB) error {
		lower := []byte{pfxStatus}
		if p.AfterID != "" {
			lower = append(key(pfxStatus, p.AfterID), 0)
		}
		return scan(db, lower, []byte{pfxStatus + 1}, false, func(k, v []byte) (bool, error) {
			e, err := decodeStatus(string(k[1:]), v)
			if err != nil {
				return false, err
			}
			if p.Since.IsZero() || e.Time.UnixMilli() >= since {
				events = append(events, e)
			}
			return len(events) < limit, nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list status events: %w", err)
	}
	return events, nil
}

// StatusEventListBySubject returns the status events of one job or event in
// ascending id.
func (s *Store) StatusEventListBySubject(_ context.Context, subject string) ([]stream.Event, error) {
	var events []stream.Event
	err := s.read(func(db *pebble.DB) error {
		prefix := append(key(pfxStatusByID, subject), 0)
		var ids []string
		if err := scan(db, prefix, prefixEnd(prefix), false, func(k, _ []byte) (bool, error) {
			ids = append(ids, string(k[len(prefix):]))
			return true, nil
		}); err != nil {
			return err
		}
		for _, id := range ids {
			v, err := get(db, key(pfxStatus, id))
			if err != nil {
				return err
			}
			if v == nil {
				continue
			}
			e, err := decodeStatus(id, v)
			if err != nil {
				return err
			}
			events = append(events, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list status events of %s: %w", subject, err)
	}
	return events, nil
}

// StatusEventDeleteBefore deletes up to limit status events older than
// before, oldest first.
func (s *Store) StatusEventDeleteBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	n := 0
	err := s.write(ctx, func(tx *writeTx) error {
		n = 0
		ids, err := timeIndexIDs(tx.b, []byte{pfxStatusTime}, key(pfxStatusTime, before.UnixMilli()), limitOr(limit, 1000))
		if err != nil {
			return err
		}
		var recs []*statusRecord
		for _, id := range ids {
			v, err := tx.get(key(pfxStatus, id))
			if err != nil {
				return err
			}
			if v == nil {
				continue
			}
			d := dec{b: v}
			r := &statusRecord{id: id, typ: d.str(), time: d.i64(), subject: d.str()}
			if d.err != nil {
				return fmt.Errorf("decode status event %s: %w", id, d.err)
			}
			recs = append(recs, r)
		}
		for _, r := range recs {
			for _, k := range [][]byte{key(pfxStatus, r.id), key(pfxStatusByID, r.subject, r.id), key(pfxStatusTime, r.time, r.id)} {
				if err := tx.del(k); err != nil {
					return err
				}
			}
		}
		n = len(recs)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("delete status events: %w", err)
	}
	return n, nil
}
