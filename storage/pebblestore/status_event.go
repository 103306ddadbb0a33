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
// then its data: in the binary form (statusDataBinary, then the fields
// appendStatusData writes) from session 13 on, a JSON object before
// (still read: its first byte is '{').
type statusRecord struct {
	id, typ, subject string
	time             int64
	data             []byte
}

func newStatusRecords(events []stream.Event) []*statusRecord {
	out := make([]*statusRecord, len(events))
	for i := range events {
		e := &events[i]
		out[i] = &statusRecord{id: e.ID, typ: e.Type, subject: e.Subject, time: e.Time.UnixMilli(), data: appendStatusData(nil, &e.Data)}
	}
	return out
}

// statusDataBinary is the first byte of a status event's data in the
// binary form (a JSON object starts with '{').
const statusDataBinary = 1

// appendStatusData appends d in the binary form: every field of
// stream.Data in declaration order, times as Unix milliseconds (noTime for
// nil: the JSON form kept milliseconds too), a pointer to a counter as a
// presence flag and the value, the subscriptions as their count + 1 (0:
// nil, which JSON leaves out, apart from empty).
func appendStatusData(b []byte, d *stream.Data) []byte {
	e := newEnc(append(b, statusDataBinary))
	e.str(d.JobID)
	e.str(d.EventID)
	e.str(d.EventType)
	e.str(d.Subscription)
	if d.Subscriptions == nil {
		e.i64(0)
	} else {
		e.i64(int64(len(d.Subscriptions)) + 1)
		for _, s := range d.Subscriptions {
			e.str(s)
		}
	}
	e.str(d.Status)
	e.i64(int64(d.Attempt))
	e.i64(int64(d.StatusCode))
	e.i64(d.DurationMs)
	e.str(d.Error)
	e.str(d.MessageGroup)
	e.optTime(d.NextAttemptAt)
	e.str(d.BlockedBy)
	e.str(d.Worker)
	e.str(d.ClientID)
	e.str(d.Reason)
	e.i64(int64(d.ConsecutiveFailures))
	e.optTime(d.NextProbeAt)
	for _, n := range []*int64{d.Scanned, d.Matched, d.Created} {
		if n == nil {
			e.i64(0)
			continue
		}
		e.i64(1)
		e.i64(*n)
	}
	return e.B
}

// parseStatusData decodes d from either form.
func parseStatusData(b []byte, d *stream.Data) error {
	if len(b) == 0 || b[0] != statusDataBinary {
		if err := json.Unmarshal(b, d); err != nil {
			return fmt.Errorf("decode data: %w", err)
		}
		d.NextAttemptAt = msUTCPtr(d.NextAttemptAt)
		d.NextProbeAt = msUTCPtr(d.NextProbeAt)
		return nil
	}
	r := newDec(b[1:])
	d.JobID = r.str()
	d.EventID = r.str()
	d.EventType = r.str()
	d.Subscription = r.str()
	if n := r.i64(); n > 0 {
		if n-1 > int64(r.Len()) {
			return errCorrupt
		}
		d.Subscriptions = make([]string, n-1)
		for i := range d.Subscriptions {
			d.Subscriptions[i] = r.str()
		}
	}
	d.Status = r.str()
	d.Attempt = int(r.i64())
	d.StatusCode = int(r.i64())
	d.DurationMs = r.i64()
	d.Error = r.str()
	d.MessageGroup = r.str()
	d.NextAttemptAt = r.optTime()
	d.BlockedBy = r.str()
	d.Worker = r.str()
	d.ClientID = r.str()
	d.Reason = r.str()
	d.ConsecutiveFailures = int(r.i64())
	d.NextProbeAt = r.optTime()
	for _, p := range []**int64{&d.Scanned, &d.Matched, &d.Created} {
		if r.i64() == 1 {
			n := r.i64()
			*p = &n
		}
	}
	if err := r.fault(); err != nil {
		return err
	}
	if r.Len() > 0 {
		return errCorrupt
	}
	return nil
}

func (r *statusRecord) value() []byte {
	e := newEnc(make([]byte, 0, 48+len(r.data)))
	e.str(r.typ)
	e.i64(r.time)
	e.str(r.subject)
	e.bytes(r.data)
	return e.B
}

// decodeStatus decodes a status event's value.
func decodeStatus(id string, v []byte) (stream.Event, error) {
	d := newDec(v)
	e := stream.Event{ID: id, Type: d.str(), Time: d.time(), Subject: d.str()}
	data := d.raw()
	if err := d.fault(); err != nil {
		return e, fmt.Errorf("decode status event %s: %w", id, err)
	}
	if err := parseStatusData(data, &e.Data); err != nil {
		return e, fmt.Errorf("decode status event %s: %w", id, err)
	}
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
	recs := newStatusRecords(events)
	err := s.write(ctx, func(tx *writeTx) error {
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
			d := newDec(v)
			r := &statusRecord{id: id, typ: d.str(), time: d.i64(), subject: d.str()}
			if err := d.fault(); err != nil {
				return fmt.Errorf("decode status event %s: %w", id, err)
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
