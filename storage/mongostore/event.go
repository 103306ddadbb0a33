package mongostore

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/store"
)

// validExtName reports whether name can be an extension name (lower-case
// letters and digits, cloudevent.Event.Validate). A filter on any other name
// matches nothing, and is never put into a field path, where a "." or "$"
// would change the query's meaning.
func validExtName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i := range len(name) {
		if c := name[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// EventIngest stores events with their jobs and status events; see
// dispatch.Store. Without a transaction it writes, in order: the new events
// (one unordered insert; a duplicate dedupKey marks its item a duplicate),
// the jobs of the new events holding their status events (see
// statusRelay; a job id already stored is skipped, so a repeated call is
// harmless), and the status events of events without jobs (likewise;
// FerretDB: every status event). The events' fannedOutAt is not written
// by the call: the marks wait in fanOutMarks for the status relay's next
// round (within about StatusRelayInterval), so a request costs two
// commands. A failure or a crash before a mark lands leaves events that
// EventListNotFannedOut returns to the recovery poller, which stores
// their jobs again harmlessly. The jobs and status event writes are
// shared with concurrent calls (group commits): under load one command
// carries those of many requests, each caller going on only once the
// command carrying its own is done.
func (s *Store) EventIngest(ctx context.Context, p *dispatch.EventIngestParams) ([]dispatch.EventIngestResult, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	results := make([]dispatch.EventIngestResult, len(p.Items))
	firstOf := make(map[string]int, len(p.Items)) // dedup key → first item with it
	laterOf := make(map[int]int)                  // later item → first item with its key
	docs := make([]any, 0, len(p.Items))
	docItem := make([]int, 0, len(p.Items)) // docs[k] is item docItem[k]
	for i, it := range p.Items {
		if first, ok := firstOf[it.Event.DedupKey]; ok {
			laterOf[i] = first
			continue
		}
		firstOf[it.Event.DedupKey] = i
		doc, err := toEventDoc(it.Event)
		if err != nil {
			return nil, fmt.Errorf("ingest events: %w", err)
		}
		doc.FannedOutAt = nil // set last, once the jobs are stored
		docs = append(docs, doc)
		docItem = append(docItem, i)
	}
	dups, err := insertIgnoringDuplicates(ctx, s.events, docs)
	if err != nil {
		return nil, fmt.Errorf("ingest events: insert events: %w", err)
	}
	if err := s.resolveDuplicates(ctx, p.Items, dups, docItem, results); err != nil {
		return nil, fmt.Errorf("ingest events: %w", err)
	}
	for later, first := range laterOf {
		existing := results[first].ExistingID
		if !results[first].Duplicate {
			existing = p.Items[first].Event.ID
		}
		results[later] = dispatch.EventIngestResult{Duplicate: true, ExistingID: existing}
	}

	var jobs []any
	var statusEvents []any
	var fresh []string
	for i, it := range p.Items {
		if results[i].Duplicate {
			continue
		}
		fresh = append(fresh, it.Event.ID)
		byID := make(map[string]*jobDoc, len(it.Jobs))
		var first *jobDoc
		for _, j := range it.Jobs {
			j.Version = 1
			doc, err := s.jobDoc(j)
			if err != nil {
				return nil, fmt.Errorf("ingest events: %w", err)
			}
			jobs = append(jobs, doc)
			byID[j.ID] = doc
			if first == nil {
				first = doc
			}
		}
		// A job's status events go in its document, the event's own
		// (accepted) in its first job's; only an event without jobs has
		// its status events inserted apart (and FerretDB all of them:
		// see Store.holdStatus).
		for k := range it.StatusEvents {
			e := toStatusEventDoc(&it.StatusEvents[k])
			switch doc := byID[e.Subject]; {
			case !s.holdStatus:
				statusEvents = append(statusEvents, e)
			case doc != nil:
				holdStatusEvents(doc, []statusEventDoc{e})
			case first != nil:
				holdStatusEvents(first, []statusEventDoc{e})
			default:
				statusEvents = append(statusEvents, e)
			}
		}
	}
	if err := s.jobInserts.Insert(ctx, jobs); err != nil {
		return nil, fmt.Errorf("ingest events: insert jobs: %w", err)
	}
	if len(jobs) > 0 && s.holdStatus {
		s.relay.poke()
	}
	if err := s.statusInserts.Insert(ctx, statusEvents); err != nil {
		return nil, fmt.Errorf("ingest events: insert status events: %w", err)
	}
	now := ms(s.nowFunc())
	if len(fresh) > 0 {
		if s.fanOutMarks.add(fresh, now) {
			s.relay.poke()
		} else if err := s.markFannedOut(ctx, toAny(fresh), now); err != nil {
			return nil, fmt.Errorf("ingest events: %w", err)
		}
	}
	for i, it := range p.Items {
		if !results[i].Duplicate {
			at := now
			it.Event.FannedOutAt = &at
		}
	}
	return results, nil
}

// resolveDuplicates fills the results of the items whose insert was refused
// (dups, indexes into the inserted docs) with the id of the stored event
// holding their dedup key.
func (s *Store) resolveDuplicates(ctx context.Context, items []dispatch.EventIngestItem, dups map[int]bool, docItem []int, results []dispatch.EventIngestResult) error {
	if len(dups) == 0 {
		return nil
	}
	keys := make([]string, 0, len(dups))
	for k := range dups {
		keys = append(keys, items[docItem[k]].Event.DedupKey)
	}
	type keyDoc struct {
		ID       string `bson:"_id"`
		DedupKey string `bson:"dedupKey"`
	}
	found, err := findAll[keyDoc](ctx, s.events,
		bson.D{{Key: "dedupKey", Value: bson.D{{Key: "$in", Value: keys}}}},
		options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}, {Key: "dedupKey", Value: 1}}))
	if err != nil {
		return fmt.Errorf("look up duplicate events: %w", err)
	}
	byKey := make(map[string]string, len(found))
	for _, f := range found {
		byKey[f.DedupKey] = f.ID
	}
	for k := range dups {
		ev := items[docItem[k]].Event
		id, ok := byKey[ev.DedupKey]
		if !ok {
			// Refused for its _id, not its dedup key: another event has
			// this id.
			return fmt.Errorf("insert event %s: %w", ev.ID, store.ErrConflict)
		}
		results[docItem[k]] = dispatch.EventIngestResult{Duplicate: true, ExistingID: id}
	}
	return nil
}

// EventGetByID returns one event; store.ErrNotFound when there is none.
func (s *Store) EventGetByID(ctx context.Context, id string) (*event.Event, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	// The waiting mark is looked up before the read: a mark leaves
	// fanOutMarks only once it is written, so one the read missed is
	// still seen here.
	at, waiting := s.fanOutMarks.at(id)
	var doc eventDoc
	if err := s.events.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&doc); err != nil {
		return nil, fmt.Errorf("get event %s: %w", id, translate(ctx, err))
	}
	e, err := doc.asDomain()
	if err != nil {
		return nil, fmt.Errorf("get event %s: %w", id, err)
	}
	if e.FannedOutAt == nil && waiting {
		e.FannedOutAt = &at
	}
	return e, nil
}

// withWaitingMarks sets FannedOutAt on the listed events whose marks wait
// in fanOutMarks: their jobs are stored. A mark written while the list was
// read (a relay round between the find and this look-up) is in neither the
// documents read nor the waiting set; so when marks left the set since
// writtenBefore (fanOutMarks.writtenCount before the find), the events
// still unmarked are read again — rarely any: most listed events were
// marked long before.
func (s *Store) withWaitingMarks(ctx context.Context, evs []*event.Event, writtenBefore uint64) error {
	var unmarked []any
	for _, e := range evs {
		if e.FannedOutAt != nil {
			continue
		}
		if at, ok := s.fanOutMarks.at(e.ID); ok {
			e.FannedOutAt = &at
			continue
		}
		unmarked = append(unmarked, e.ID)
	}
	if len(unmarked) == 0 || s.fanOutMarks.writtenCount() == writtenBefore {
		return nil
	}
	type markDoc struct {
		ID          string     `bson:"_id"`
		FannedOutAt *time.Time `bson:"fannedOutAt"`
	}
	docs, err := findAll[markDoc](ctx, s.events, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: unmarked}}}},
		options.Find().SetProjection(bson.D{{Key: "fannedOutAt", Value: 1}}))
	if err != nil {
		return fmt.Errorf("read fan-out marks: %w", err)
	}
	marked := make(map[string]*time.Time, len(docs))
	for _, d := range docs {
		marked[d.ID] = utcPtr(d.FannedOutAt)
	}
	for _, e := range evs {
		if e.FannedOutAt == nil {
			e.FannedOutAt = marked[e.ID]
		}
	}
	return nil
}

// toAny returns ids as a []any.
func toAny(ids []string) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

// EventList returns one page of events, newest (highest id) first.
func (s *Store) EventList(ctx context.Context, p *event.ListParams) (*event.Page, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	filter := bson.D{}
	eq := func(field, v string) {
		if v != "" {
			filter = append(filter, bson.E{Key: field, Value: v})
		}
	}
	eq("event.type", p.Type)
	eq("event.source", p.Source)
	eq("event.subject", p.Subject)
	eq("event.extStr.messagegroup", p.MessageGroup)
	for name, v := range p.Ext {
		if !validExtName(name) {
			return &event.Page{}, nil
		}
		filter = append(filter, bson.E{Key: "event.extStr." + name, Value: v})
	}
	filter = appendRange(filter, "receivedAt", p.Since, p.Until)
	written := s.fanOutMarks.writtenCount()
	docs, next, err := findPage[eventDoc](ctx, s.events, filter, p.Cursor, p.Limit, func(d *eventDoc) string { return d.ID })
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	page := &event.Page{Events: make([]*event.Event, len(docs)), NextCursor: next}
	for i := range docs {
		if page.Events[i], err = docs[i].asDomain(); err != nil {
			return nil, fmt.Errorf("list events: %w", err)
		}
	}
	if err := s.withWaitingMarks(ctx, page.Events, written); err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return page, nil
}

// EventListNotFannedOut returns up to p.Limit events received before
// p.ReceivedBefore that are not marked fanned out, oldest first. The
// marks waiting in fanOutMarks are written first.
func (s *Store) EventListNotFannedOut(ctx context.Context, p *event.ListNotFannedOutParams) ([]*event.Event, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if err := s.writeFanOutMarks(ctx); err != nil {
		return nil, fmt.Errorf("list events not fanned out: %w", err)
	}
	filter := bson.D{
		{Key: "fannedOutAt", Value: nil},
		{Key: "receivedAt", Value: bson.D{{Key: "$lt", Value: ms(p.ReceivedBefore)}}},
	}
	opts := options.Find().SetSort(bson.D{{Key: "fannedOutAt", Value: 1}, {Key: "receivedAt", Value: 1}, {Key: "_id", Value: 1}})
	if p.Limit > 0 {
		opts.SetLimit(int64(p.Limit))
	}
	docs, err := findAll[eventDoc](ctx, s.events, filter, opts)
	if err != nil {
		return nil, fmt.Errorf("list events not fanned out: %w", err)
	}
	out := make([]*event.Event, len(docs))
	for i := range docs {
		if out[i], err = docs[i].asDomain(); err != nil {
			return nil, fmt.Errorf("list events not fanned out: %w", err)
		}
	}
	return out, nil
}

// EventMarkFannedOut marks events fanned out at `at`. Ids that are not
// stored are ignored.
func (s *Store) EventMarkFannedOut(ctx context.Context, ids []string, at time.Time) error {
	if err := s.check(); err != nil {
		return err
	}
	if err := s.markFannedOut(ctx, toAny(ids), ms(at)); err != nil {
		return fmt.Errorf("mark events fanned out: %w", err)
	}
	return nil
}

// markFannedOut sets the fannedOutAt of the events with the given ids
// (strings) to at.
func (s *Store) markFannedOut(ctx context.Context, ids []any, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	if s.writeGuards {
		// FerretDB pushes down only {_id: value} filters; an $in scans the
		// whole collection. One update per id stays O(1) each.
		// MongoDB takes the first; the others are FerretDB's.
		for i, id := range ids {
			uctx := ctx
			if i > 0 {
				uctx = withCommandTag(ctx, tagFerretDB)
			}
			if _, err := s.events.UpdateOne(uctx, bson.D{{Key: "_id", Value: id}},
				bson.D{{Key: "$set", Value: bson.D{{Key: "fannedOutAt", Value: at}}}}); err != nil {
				return fmt.Errorf("set fannedOutAt of %v: %w", id, translate(ctx, err))
			}
		}
		return nil
	}
	_, err := s.events.UpdateMany(ctx,
		bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "fannedOutAt", Value: at}}}})
	if err != nil {
		return fmt.Errorf("set fannedOutAt: %w", translate(ctx, err))
	}
	return nil
}

// EventDeleteBefore deletes up to limit events received before `before`,
// oldest first, and returns how many it deleted.
func (s *Store) EventDeleteBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	n, err := deleteOldest(ctx, s.events,
		bson.D{{Key: "receivedAt", Value: bson.D{{Key: "$lt", Value: ms(before)}}}},
		bson.D{{Key: "receivedAt", Value: 1}, {Key: "_id", Value: 1}}, limit)
	if err != nil {
		return n, fmt.Errorf("delete events before %s: %w", before.Format(time.RFC3339), err)
	}
	return n, nil
}
