package mongostore

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/hooklane/hooklane/store"
)

// The members of a job document set while it holds operational outbox
// events: outboxPendingField (true, indexed: the relay finds the jobs
// holding some by it) and outboxAtField (when the outbox started).
const (
	outboxPendingField = "operationalOutboxPending"
	outboxPendingValue = "pending"
	outboxAtField      = "operationalOutboxAt"
)

// jobOutboxHolder is the outbox of a job document, with its version.
type jobOutboxHolder struct {
	ID       string           `bson:"_id"`
	Version  int64            `bson:"version"`
	Outbox   []statusEventDoc `bson:"operationalOutbox"`
	OutboxAt *time.Time       `bson:"operationalOutboxAt"`
	// StatusOutbox are the held status events (see statusRelay).
	StatusOutbox []statusEventDoc `bson:"statusOutbox"`
}

// jobHasOutbox matches the job documents holding outbox events: a string
// equality on an indexed field missing on every other job. (A range on
// OutboxAt, or a boolean equality, scanned and decoded every job on
// FerretDB v1: 5 to 8 s over 10,000 jobs, against about 2 ms for a string
// equality.)
func jobHasOutbox() bson.D {
	return bson.D{{Key: outboxPendingField, Value: outboxPendingValue}}
}

// replaceJob replaces job id with doc when its version is expected, the
// optimistic lock of JobUpdate (see replaceVersioned), and keeps the
// operational outbox events and the status events the stored document
// holds and the relays have not taken yet: doc holds only the update's
// own (Outbox, StatusOutbox). On MongoDB that is one update filtered on
// id and version: $set of every job field, the update's own events
// appended with $push. On FerretDB the version is read under the write
// guard anyway, and the held events with it, and the document replaced.
// MongoDB's update is committed with those of concurrent calls in one
// bulkWrite (see jobCommitter). FerretDB's replace is sent alone: shared
// replaces under write guards stalled it (measured: with batches of 100
// at 8 connections, claims waited past the router's 10 s deadline for
// the shared command, and guard deletes timed out).
func (s *Store) replaceJob(ctx context.Context, id string, expected int64, doc *jobDoc) error {
	own, ownStatus := doc.Outbox, doc.StatusOutbox
	doc.WriteToken = s.jobCommits.newToken()
	if !s.writeGuards {
		update, err := jobUpdateDoc(doc, own, ownStatus, s.nowFunc())
		if err != nil {
			return err
		}
		return s.jobCommits.commit(ctx, &jobWrite{
			id: id, expected: expected, token: doc.WriteToken,
			model: mongo.NewUpdateOneModel().
				SetFilter(bson.D{{Key: "_id", Value: id}, {Key: "version", Value: expected}}).
				SetUpdate(update),
		})
	}
	key := fmt.Sprintf("%s/%s@%d", s.jobs.Name(), id, expected+1)
	take := s.acquireGuard
	if s.holdStatus {
		// The status relay may hold the guard for a moment (see
		// statusRelay.clear).
		take = s.acquireGuardWaiting
	}
	acquired, err := take(ctx, key)
	if err != nil {
		return err
	}
	if !acquired {
		return s.missingOr(ctx, s.jobs, id, store.ErrStale)
	}
	defer s.releaseGuard(ctx, key)
	cur, err := s.jobOutbox(withCommandTag(ctx, tagGuard), id)
	if err != nil {
		return err
	}
	if cur.Version != expected {
		return store.ErrStale
	}
	withOutbox(doc, cur.Outbox, own, s.nowFunc())
	doc.StatusOutbox, doc.StatusPending = nil, ""
	holdStatusEvents(doc, cur.StatusOutbox)
	holdStatusEvents(doc, ownStatus)
	res, err := s.jobs.ReplaceOne(ctx, bson.D{{Key: "_id", Value: id}}, doc)
	if err != nil {
		return translate(ctx, err)
	}
	if res.MatchedCount == 0 {
		return store.ErrNotFound
	}
	return nil
}

// jobOptionalFields are the members of a job document that are left out
// when empty (omitempty, outside the outboxes): an update that $sets the
// others $unsets these when the job has none, as a replace would drop
// them.
func jobOptionalFields() []string {
	return []string{"auth", "tls", "retriedAt", "traceParent"}
}

// jobUpdateDoc is JobUpdate's update on MongoDB: $set of every member of
// doc but _id and the outboxes, $unset of the optional members it lacks,
// and the update's own events appended to the held ones ($push), their
// markers set (the operational outbox's start kept when earlier: $min).
func jobUpdateDoc(doc *jobDoc, own, ownStatus []statusEventDoc, now time.Time) (bson.D, error) {
	base := *doc
	base.Outbox, base.OutboxPending, base.OutboxAt = nil, "", nil
	base.StatusOutbox, base.StatusPending = nil, ""
	raw, err := bson.Marshal(&base)
	if err != nil {
		return nil, fmt.Errorf("encode job: %w", err)
	}
	elems, err := bson.Raw(raw).Elements()
	if err != nil {
		return nil, fmt.Errorf("encode job: %w", err)
	}
	set := make(bson.D, 0, len(elems)+2)
	present := make(map[string]bool, len(elems))
	for _, e := range elems {
		k := e.Key()
		present[k] = true
		if k != "_id" {
			set = append(set, bson.E{Key: k, Value: e.Value()})
		}
	}
	unset := bson.D{}
	for _, k := range jobOptionalFields() {
		if !present[k] {
			unset = append(unset, bson.E{Key: k, Value: ""})
		}
	}
	push := bson.D{}
	update := bson.D{}
	if len(own) > 0 {
		push = append(push, bson.E{Key: outboxField, Value: bson.D{{Key: "$each", Value: own}}})
		set = append(set, bson.E{Key: outboxPendingField, Value: outboxPendingValue})
		update = append(update, bson.E{Key: "$min", Value: bson.D{{Key: outboxAtField, Value: ms(now)}}})
	}
	if len(ownStatus) > 0 {
		push = append(push, bson.E{Key: statusOutboxField, Value: bson.D{{Key: "$each", Value: ownStatus}}})
		set = append(set, bson.E{Key: statusPendingField, Value: statusPendingValue})
	}
	update = append(update, bson.E{Key: "$set", Value: set})
	if len(unset) > 0 {
		update = append(update, bson.E{Key: "$unset", Value: unset})
	}
	if len(push) > 0 {
		update = append(update, bson.E{Key: "$push", Value: push})
	}
	return update, nil
}

// jobOutbox reads the version and the outbox of job id (on _id alone, the
// one filter FerretDB v1 pushes down).
func (s *Store) jobOutbox(ctx context.Context, id string) (*jobOutboxHolder, error) {
	var cur jobOutboxHolder
	err := s.jobs.FindOne(ctx, bson.D{{Key: "_id", Value: id}}, options.FindOne().SetProjection(bson.D{
		{Key: "version", Value: 1}, {Key: outboxField, Value: 1}, {Key: outboxAtField, Value: 1}, {Key: statusOutboxField, Value: 1},
	})).Decode(&cur)
	if err != nil {
		return nil, translate(ctx, err)
	}
	return &cur, nil
}

// withOutbox sets doc's outbox to the stored events followed by the
// update's own, and OutboxAt to match: kept when it was set, now when the
// outbox starts, nil when it is empty.
func withOutbox(doc *jobDoc, stored, own []statusEventDoc, now time.Time) {
	doc.Outbox = append(append([]statusEventDoc(nil), stored...), own...)
	if len(doc.Outbox) == 0 {
		doc.Outbox, doc.OutboxPending, doc.OutboxAt = nil, "", nil
		return
	}
	doc.OutboxPending = outboxPendingValue
	if doc.OutboxAt == nil {
		at := ms(now)
		doc.OutboxAt = &at
	}
}

// jobOutboxDelete removes the outbox events in drop from the job documents
// holding them: each one's outbox is rewritten without them, filtered on
// the version and OutboxAt it was read at, so a job write in between is
// never undone (it is read and tried again).
func (s *Store) jobOutboxDelete(ctx context.Context, drop map[string]bool) error {
	for range outboxRetries {
		docs, err := findAll[jobOutboxHolder](ctx, s.jobs, jobHasOutbox(), options.Find().SetProjection(bson.D{
			{Key: "version", Value: 1}, {Key: outboxField, Value: 1}, {Key: outboxAtField, Value: 1},
		}))
		if err != nil {
			return err
		}
		lost := false
		for i := range docs {
			d := &docs[i]
			keep := make([]statusEventDoc, 0, len(d.Outbox))
			for _, e := range d.Outbox {
				if !drop[e.ID] {
					keep = append(keep, e)
				}
			}
			if len(keep) == len(d.Outbox) {
				continue
			}
			set := bson.D{{Key: "$unset", Value: bson.D{{Key: outboxField, Value: ""}, {Key: outboxPendingField, Value: ""}, {Key: outboxAtField, Value: ""}}}}
			if len(keep) > 0 {
				set = bson.D{{Key: "$set", Value: bson.D{{Key: outboxField, Value: keep}}}}
			}
			res, err := s.jobs.UpdateOne(ctx, bson.D{{Key: "_id", Value: d.ID}, {Key: "version", Value: d.Version}, {Key: outboxAtField, Value: d.OutboxAt}}, set)
			if err != nil {
				return translate(ctx, err)
			}
			if res.MatchedCount == 0 {
				lost = true
			}
		}
		if !lost {
			return nil
		}
	}
	return fmt.Errorf("job outbox rewritten concurrently %d times: %w", outboxRetries, store.ErrConflict)
}

// jobOutboxList returns the outbox events held by the limit job documents
// whose outbox started first.
func (s *Store) jobOutboxList(ctx context.Context, limit int) ([]statusEventDoc, error) {
	docs, err := findAll[jobOutboxHolder](ctx, s.jobs, jobHasOutbox(), options.Find().
		SetProjection(bson.D{{Key: outboxField, Value: 1}}).
		SetSort(bson.D{{Key: outboxAtField, Value: 1}, {Key: "_id", Value: 1}}).SetLimit(int64(limit)))
	if err != nil {
		return nil, err
	}
	var out []statusEventDoc
	for i := range docs {
		out = append(out, docs[i].Outbox...)
	}
	return out, nil
}
