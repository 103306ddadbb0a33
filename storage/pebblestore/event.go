package pebblestore

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/store"
)

// eventFormat is the first byte of an event's value: its encoding version.
const eventFormat = 1

// eventRecord is an event as stored: the fields the indexes and filters
// read, then the CloudEvent's JSON document.
type eventRecord struct {
	id, dedupKey, schemaVersion        string
	typ, source, subject, messageGroup string
	receivedAt                         int64
	fannedOutAt                        *time.Time
	extNames, extValues                []string
	doc                                []byte
}

// newEventRecord encodes e for the store, in the caller's goroutine.
func newEventRecord(e *event.Event) (*eventRecord, error) {
	doc, err := e.Event.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encode event %s: %w", e.ID, err)
	}
	r := &eventRecord{
		id: e.ID, dedupKey: e.DedupKey, schemaVersion: e.SchemaVersion,
		typ: e.Event.Type, source: e.Event.Source, subject: e.Event.Subject,
		messageGroup: e.Event.Ext(cloudevent.ExtMessageGroup),
		receivedAt:   e.ReceivedAt.UnixMilli(), fannedOutAt: msUTCPtr(e.FannedOutAt), doc: doc,
	}
	for _, name := range slices.Sorted(maps.Keys(e.Event.Extensions)) {
		r.extNames = append(r.extNames, name)
		r.extValues = append(r.extValues, e.Event.Ext(name))
	}
	return r, nil
}

func (r *eventRecord) value() []byte {
	e := newEnc(append(make([]byte, 0, 64+len(r.doc)), eventFormat))
	e.str(r.dedupKey)
	e.i64(r.receivedAt)
	e.optTime(r.fannedOutAt)
	e.str(r.schemaVersion)
	e.str(r.typ)
	e.str(r.source)
	e.str(r.subject)
	e.str(r.messageGroup)
	e.i64(int64(len(r.extNames)))
	for i, n := range r.extNames {
		e.str(n)
		e.str(r.extValues[i])
	}
	e.bytes(r.doc)
	return e.B
}

// parseEventRecord decodes an event's value; doc aliases v.
func parseEventRecord(id string, v []byte) (*eventRecord, error) {
	if len(v) == 0 || v[0] != eventFormat {
		return nil, fmt.Errorf("decode event %s: %w", id, errCorrupt)
	}
	d := newDec(v[1:])
	r := &eventRecord{id: id}
	r.dedupKey = d.str()
	r.receivedAt = d.i64()
	r.fannedOutAt = d.optTime()
	r.schemaVersion = d.str()
	r.typ = d.str()
	r.source = d.str()
	r.subject = d.str()
	r.messageGroup = d.str()
	n := d.i64()
	for i := int64(0); i < n && d.Err() == nil; i++ {
		r.extNames = append(r.extNames, d.str())
		r.extValues = append(r.extValues, d.str())
	}
	r.doc = d.raw()
	if err := d.fault(); err != nil {
		return nil, fmt.Errorf("decode event %s: %w", id, err)
	}
	return r, nil
}

// event decodes the record into an event.
func (r *eventRecord) event() (*event.Event, error) {
	e := &event.Event{
		ID: r.id, DedupKey: r.dedupKey, ReceivedAt: time.UnixMilli(r.receivedAt).UTC(),
		SchemaVersion: r.schemaVersion, FannedOutAt: r.fannedOutAt,
	}
	if err := json.Unmarshal(r.doc, &e.Event); err != nil {
		return nil, fmt.Errorf("decode event %s: %w", r.id, err)
	}
	if !e.Event.Time.IsZero() {
		e.Event.Time = e.Event.Time.UTC()
	}
	return e, nil
}

// ext returns the value of extension name, and whether it is set.
func (r *eventRecord) ext(name string) (string, bool) {
	for i, n := range r.extNames {
		if n == name {
			return r.extValues[i], true
		}
	}
	return "", false
}

// putEvent writes the event and its index entries.
func putEvent(tx *writeTx, r *eventRecord) error {
	if err := tx.set(key(pfxEvent, r.id), r.value()); err != nil {
		return err
	}
	if err := tx.set(key(pfxDedup, r.dedupKey), []byte(r.id)); err != nil {
		return err
	}
	if err := tx.set(key(pfxReceived, r.receivedAt, r.id), nil); err != nil {
		return err
	}
	if r.fannedOutAt == nil {
		if err := tx.set(key(pfxNotFannedOut, r.receivedAt, r.id), nil); err != nil {
			return err
		}
	}
	return tx.set(key(pfxEventType, r.typ, r.id), nil)
}

// deleteEvent deletes the event and its index entries.
func deleteEvent(tx *writeTx, r *eventRecord) error {
	owner, err := tx.get(key(pfxDedup, r.dedupKey))
	if err != nil {
		return err
	}
	for _, k := range [][]byte{
		key(pfxEvent, r.id), key(pfxReceived, r.receivedAt, r.id),
		key(pfxNotFannedOut, r.receivedAt, r.id), key(pfxEventType, r.typ, r.id),
	} {
		if err := tx.del(k); err != nil {
			return err
		}
	}
	if string(owner) == r.id {
		return tx.del(key(pfxDedup, r.dedupKey))
	}
	return nil
}

// ingestRecord is one ingest item encoded for the store.
type ingestRecord struct {
	event  *eventRecord
	jobs   []*jobRecord
	status []*statusRecord
}

// EventIngest stores each item that is not a duplicate, in one batch: the
// event (marked fanned out now), its jobs and its status events.
func (s *Store) EventIngest(ctx context.Context, p *dispatch.EventIngestParams) ([]dispatch.EventIngestResult, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	now := msUTC(s.nowFunc())
	items := make([]ingestRecord, len(p.Items))
	for i := range p.Items {
		it := &p.Items[i]
		ev, err := newEventRecord(it.Event)
		if err != nil {
			return nil, fmt.Errorf("ingest events: %w", err)
		}
		ev.fannedOutAt = &now
		jobs, err := s.newJobRecords(it.Jobs, 1)
		if err != nil {
			return nil, fmt.Errorf("ingest events: %w", err)
		}
		st := newStatusRecords(it.StatusEvents)
		items[i] = ingestRecord{event: ev, jobs: jobs, status: st}
	}
	results := make([]dispatch.EventIngestResult, len(items))
	err := s.write(ctx, func(tx *writeTx) error {
		seen := make(map[string]string, len(items))
		dups := make([]string, len(items))
		for i, it := range items {
			if id, ok := seen[it.event.dedupKey]; ok {
				dups[i] = id
				continue
			}
			existing, err := tx.get(key(pfxDedup, it.event.dedupKey))
			if err != nil {
				return err
			}
			if existing != nil {
				dups[i] = string(existing)
				continue
			}
			seen[it.event.dedupKey] = it.event.id
		}
		for i, it := range items {
			results[i] = dispatch.EventIngestResult{Duplicate: dups[i] != "", ExistingID: dups[i]}
			if dups[i] != "" {
				continue
			}
			if err := putEvent(tx, it.event); err != nil {
				return err
			}
			if _, err := insertJobs(tx, it.jobs, it.status, true); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ingest events: %w", err)
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

// EventGetByID returns one event.
func (s *Store) EventGetByID(_ context.Context, id string) (*event.Event, error) {
	var e *event.Event
	err := s.read(func(db *pebble.DB) error {
		v, err := get(db, key(pfxEvent, id))
		if err != nil {
			return err
		}
		if v == nil {
			return store.ErrNotFound
		}
		r, err := parseEventRecord(id, v)
		if err != nil {
			return err
		}
		e, err = r.event()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get event %s: %w", id, err)
	}
	return e, nil
}

// matches reports whether r passes the list's filters.
func (r *eventRecord) matches(p *event.ListParams) bool {
	switch {
	case p.Type != "" && r.typ != p.Type,
		p.Source != "" && r.source != p.Source,
		p.Subject != "" && r.subject != p.Subject,
		p.MessageGroup != "" && r.messageGroup != p.MessageGroup,
		!p.Since.IsZero() && r.receivedAt < p.Since.UnixMilli(),
		!p.Until.IsZero() && r.receivedAt >= p.Until.UnixMilli():
		return false
	}
	for name, want := range p.Ext {
		if v, ok := r.ext(name); !ok || v != want {
			return false
		}
	}
	return true
}

// EventList returns one page of events, highest id first. A type filter
// walks the type index; the other filters are checked on the events'
// headers as the walk goes, without decoding their documents.
func (s *Store) EventList(_ context.Context, p *event.ListParams) (*event.Page, error) {
	limit := pageLimit(p.Limit)
	var recs []*eventRecord
	err := s.read(func(db *pebble.DB) error {
		lower, upper := []byte{pfxEvent}, []byte{pfxEvent + 1}
		if p.Cursor != "" {
			upper = key(pfxEvent, p.Cursor)
		}
		if p.Type != "" {
			return s.listEventsByType(db, p, limit, &recs)
		}
		return scan(db, lower, upper, true, func(k, v []byte) (bool, error) {
			r, err := parseEventRecord(string(k[1:]), v)
			if err != nil {
				return false, err
			}
			if r.matches(p) {
				r.doc = append([]byte(nil), r.doc...) // the iterator's memory
				recs = append(recs, r)
			}
			return len(recs) <= limit, nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return eventPage(recs, limit)
}

func (s *Store) listEventsByType(db *pebble.DB, p *event.ListParams, limit int, recs *[]*eventRecord) error {
	prefix := append(key(pfxEventType, p.Type), 0)
	upper := prefixEnd(prefix)
	if p.Cursor != "" {
		upper = key(pfxEventType, p.Type, p.Cursor)
	}
	return scan(db, prefix, upper, true, func(k, _ []byte) (bool, error) {
		id := string(k[len(prefix):])
		v, err := get(db, key(pfxEvent, id))
		if err != nil || v == nil {
			return err == nil, err
		}
		r, err := parseEventRecord(id, v)
		if err != nil {
			return false, err
		}
		if r.matches(p) {
			*recs = append(*recs, r)
		}
		return len(*recs) <= limit, nil
	})
}

func eventPage(recs []*eventRecord, limit int) (*event.Page, error) {
	page := &event.Page{}
	for i, r := range recs {
		if i == limit {
			page.NextCursor = recs[limit-1].id
			break
		}
		e, err := r.event()
		if err != nil {
			return nil, fmt.Errorf("list events: %w", err)
		}
		page.Events = append(page.Events, e)
	}
	return page, nil
}

// eventsAt reads the events the index keys name (their ids after skip
// bytes), in order.
func eventsAt(db *pebble.DB, ids []string) ([]*event.Event, error) {
	var out []*event.Event
	for _, id := range ids {
		v, err := get(db, key(pfxEvent, id))
		if err != nil {
			return nil, err
		}
		if v == nil {
			continue
		}
		r, err := parseEventRecord(id, v)
		if err != nil {
			return nil, err
		}
		e, err := r.event()
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// timeIndexIDs returns up to limit ids of a time index (prefix, 8-byte
// time, id) in [lower, upper).
func timeIndexIDs(r pebble.Reader, lower, upper []byte, limit int) ([]string, error) {
	var ids []string
	err := scan(r, lower, upper, false, func(k, _ []byte) (bool, error) {
		ids = append(ids, string(k[9:]))
		return len(ids) < limit, nil
	})
	return ids, err
}

// EventListNotFannedOut returns events not marked fanned out received before
// p.ReceivedBefore, oldest first.
func (s *Store) EventListNotFannedOut(_ context.Context, p *event.ListNotFannedOutParams) ([]*event.Event, error) {
	var events []*event.Event
	err := s.read(func(db *pebble.DB) error {
		ids, err := timeIndexIDs(db, []byte{pfxNotFannedOut}, key(pfxNotFannedOut, p.ReceivedBefore.UnixMilli()), limitOr(p.Limit, 100))
		if err != nil {
			return err
		}
		events, err = eventsAt(db, ids)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list events not fanned out: %w", err)
	}
	return events, nil
}

// EventListReceived returns a page of events in (receivedAt, id) order
// after the given position (the time index).
func (s *Store) EventListReceived(_ context.Context, p *event.ListReceivedParams) ([]*event.Event, error) {
	var events []*event.Event
	err := s.read(func(db *pebble.DB) error {
		lower := key(pfxReceived, p.Since.UnixMilli())
		if p.AfterID != "" {
			lower = append(key(pfxReceived, p.AfterReceivedAt.UnixMilli(), p.AfterID), 0)
		}
		ids, err := timeIndexIDs(db, lower, key(pfxReceived, p.Until.UnixMilli()), limitOr(p.Limit, 500))
		if err != nil {
			return err
		}
		events, err = eventsAt(db, ids)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list events by receivedAt: %w", err)
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
	at = msUTC(at)
	err := s.write(ctx, func(tx *writeTx) error {
		var recs []*eventRecord
		for _, id := range ids {
			v, err := tx.get(key(pfxEvent, id))
			if err != nil {
				return err
			}
			if v == nil {
				continue
			}
			r, err := parseEventRecord(id, v)
			if err != nil {
				return err
			}
			recs = append(recs, r)
		}
		for _, r := range recs {
			r.fannedOutAt = &at
			if err := tx.set(key(pfxEvent, r.id), r.value()); err != nil {
				return err
			}
			if err := tx.del(key(pfxNotFannedOut, r.receivedAt, r.id)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("mark %d events fanned out: %w", len(ids), err)
	}
	return nil
}

// EventDeleteBefore deletes up to limit events received before `before`,
// oldest first.
func (s *Store) EventDeleteBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	n := 0
	err := s.write(ctx, func(tx *writeTx) error {
		n = 0
		ids, err := timeIndexIDs(tx.b, []byte{pfxReceived}, key(pfxReceived, before.UnixMilli()), limitOr(limit, 1000))
		if err != nil {
			return err
		}
		var recs []*eventRecord
		for _, id := range ids {
			v, err := tx.get(key(pfxEvent, id))
			if err != nil {
				return err
			}
			if v == nil {
				continue
			}
			r, err := parseEventRecord(id, v)
			if err != nil {
				return err
			}
			recs = append(recs, r)
		}
		for _, r := range recs {
			if err := deleteEvent(tx, r); err != nil {
				return err
			}
		}
		n = len(recs)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("delete events: %w", err)
	}
	return n, nil
}
