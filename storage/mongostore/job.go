package mongostore

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/stream"
)

// sortOrderKey is the order of due and group lists: ascending OrderKey, ties
// broken by id so the order is total.
func sortOrderKey() bson.D {
	return bson.D{{Key: "orderKey", Value: 1}, {Key: "_id", Value: 1}}
}

// JobInsertMany stores jobs (their Version set to 1, on the passed jobs
// too) in one unordered insert, each holding the status events about it
// (Subject = its id) for the status relay (on FerretDB inserted apart:
// see Store.holdStatus); the other status events are inserted apart. A job whose id is stored already is left as it is, and
// the events it would hold are not written again, so repeating a call is
// harmless.
func (s *Store) JobInsertMany(ctx context.Context, p *dispatch.JobInsertManyParams) error {
	if err := s.check(); err != nil {
		return err
	}
	docs := make([]any, len(p.Jobs))
	byID := make(map[string]*jobDoc, len(p.Jobs))
	for i, j := range p.Jobs {
		j.Version = 1
		doc, err := s.jobDoc(j)
		if err != nil {
			return fmt.Errorf("insert jobs: %w", err)
		}
		docs[i] = doc
		byID[j.ID] = doc
	}
	var apart []stream.Event
	for i := range p.Events {
		if doc := byID[p.Events[i].Subject]; doc != nil && s.holdStatus {
			holdStatusEvents(doc, []statusEventDoc{toStatusEventDoc(&p.Events[i])})
		} else {
			apart = append(apart, p.Events[i])
		}
	}
	dups, err := insertIgnoringDuplicates(ctx, s.jobs, docs)
	if err != nil {
		return fmt.Errorf("insert jobs: %w", err)
	}
	if s.holdStatus {
		s.relay.poke()
	}
	if len(dups) > 0 {
		skip := make(map[string]bool, len(dups))
		for i := range dups {
			skip[p.Jobs[i].ID] = true
		}
		kept := apart[:0]
		for _, e := range apart {
			if !skip[e.Subject] {
				kept = append(kept, e)
			}
		}
		apart = kept
	}
	if err := s.insertStatusEvents(ctx, apart); err != nil {
		return fmt.Errorf("insert jobs: insert status events: %w", err)
	}
	return nil
}

// JobGetByID returns one job; store.ErrNotFound when there is none.
func (s *Store) JobGetByID(ctx context.Context, id string) (*dispatch.Job, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	var doc jobDoc
	if err := s.jobs.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&doc); err != nil {
		return nil, fmt.Errorf("get job %s: %w", id, translate(ctx, err))
	}
	j, err := s.job(&doc)
	if err != nil {
		return nil, fmt.Errorf("get job %s: %w", id, err)
	}
	return j, nil
}

// JobGetMany returns the jobs with the given ids that exist, in no
// particular order.
func (s *Store) JobGetMany(ctx context.Context, ids []string) ([]*dispatch.Job, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	jobs, err := s.findJobs(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
	if err != nil {
		return nil, fmt.Errorf("get %d jobs: %w", len(ids), err)
	}
	return jobs, nil
}

// JobListByEvent returns the jobs of one event, in no particular order.
func (s *Store) JobListByEvent(ctx context.Context, eventID string) ([]*dispatch.Job, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	jobs, err := s.findJobs(ctx, bson.D{{Key: "eventId", Value: eventID}})
	if err != nil {
		return nil, fmt.Errorf("list jobs of event %s: %w", eventID, err)
	}
	return jobs, nil
}

// JobList returns one page of jobs, newest (highest id) first.
func (s *Store) JobList(ctx context.Context, p *dispatch.JobListParams) (*dispatch.JobPage, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	filter := bson.D{}
	eq := func(field, v string) {
		if v != "" {
			filter = append(filter, bson.E{Key: field, Value: v})
		}
	}
	eq("status", string(p.Status))
	eq("subscriptionId", p.SubscriptionID)
	if p.SubscriptionIDs != nil {
		filter = append(filter, bson.E{Key: "subscriptionId", Value: bson.D{{Key: "$in", Value: append([]string{}, p.SubscriptionIDs...)}}})
	}
	eq("subscription", p.Subscription)
	eq("eventId", p.EventID)
	eq("code", p.EventType)
	eq("messageGroup", p.MessageGroup)
	filter = appendRange(filter, "createdAt", p.Since, p.Until)
	docs, next, err := findPage[jobDoc](ctx, s.jobs, filter, p.Cursor, p.Limit, func(d *jobDoc) string { return d.ID })
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	jobs, err := s.jobsOf(docs)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return &dispatch.JobPage{Jobs: jobs, NextCursor: next}, nil
}

// JobUpdate replaces the stored job when its version is p.Job.Version (one
// update filtered on id and version, behind a write guard on FerretDB: see
// replaceJob; concurrent calls' updates share one bulkWrite, see
// jobCommitter), with its operational outbox events (p.Outbox) and its
// status events (p.Events, which the status relay moves to statusEvents)
// inside the written document, then sets p.Job.Version to the new
// version. (On FerretDB the status events are inserted apart, after the
// job: see Store.holdStatus.) It returns
// store.ErrConflict when the version moved on, store.ErrNotFound when the
// job is gone; either way nothing is written and p.Job is unchanged.
func (s *Store) JobUpdate(ctx context.Context, p *dispatch.JobUpdateParams) error {
	if err := s.check(); err != nil {
		return err
	}
	j := p.Job
	doc, err := s.jobDoc(j)
	if err != nil {
		return fmt.Errorf("update job %s: %w", j.ID, err)
	}
	doc.Version = j.Version + 1
	for i := range p.Outbox {
		doc.Outbox = append(doc.Outbox, toStatusEventDoc(&p.Outbox[i]))
	}
	if s.holdStatus {
		for i := range p.Events {
			doc.StatusOutbox = append(doc.StatusOutbox, toStatusEventDoc(&p.Events[i]))
		}
	}
	if err := s.replaceJob(ctx, j.ID, j.Version, doc); err != nil {
		return fmt.Errorf("update job %s at version %d: %w", j.ID, j.Version, err)
	}
	j.Version = doc.Version
	if !s.holdStatus {
		if err := s.insertStatusEvents(ctx, p.Events); err != nil {
			return fmt.Errorf("update job %s: insert status events: %w", j.ID, err)
		}
		return nil
	}
	if len(p.Events) > 0 {
		s.relay.poke()
	}
	return nil
}

// JobListDue returns up to p.Limit due jobs of status p.Status, ascending
// OrderKey; see dispatch.Store. A finished status is never due.
func (s *Store) JobListDue(ctx context.Context, p *dispatch.JobListDueParams) ([]*dispatch.Job, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	now := ms(p.Now)
	lte := bson.D{{Key: "$lte", Value: now}}
	filter := bson.D{{Key: "status", Value: string(p.Status)}}
	switch p.Status {
	case dispatch.StatusPending:
		// A null nextAttemptAt is due at once.
		filter = append(filter, bson.E{Key: "$or", Value: bson.A{
			bson.D{{Key: "nextAttemptAt", Value: nil}},
			bson.D{{Key: "nextAttemptAt", Value: lte}},
		}})
	case dispatch.StatusQueued:
		filter = append(filter, bson.E{Key: "updatedAt", Value: lte})
	case dispatch.StatusInProgress:
		filter = append(filter, bson.E{Key: "leaseExpiresAt", Value: lte})
	default:
		return nil, nil
	}
	if p.SubscriptionID != "" {
		filter = append(filter, bson.E{Key: "subscriptionId", Value: p.SubscriptionID})
	}
	switch p.Delivery {
	case "":
	case dispatch.DeliveryPush:
		// A job without a delivery kind is pushed.
		filter = append(filter, bson.E{Key: "delivery", Value: bson.D{{Key: "$ne", Value: string(dispatch.DeliveryPull)}}})
	default:
		filter = append(filter, bson.E{Key: "delivery", Value: string(p.Delivery)})
	}
	opts := options.Find().SetSort(sortOrderKey())
	if p.Limit > 0 {
		opts.SetLimit(int64(p.Limit))
	}
	jobs, err := s.findJobs(ctx, filter, opts)
	if err != nil {
		return nil, fmt.Errorf("list due %s jobs: %w", p.Status, err)
	}
	return jobs, nil
}

// JobListGroup returns up to p.Limit jobs of one message group of one
// subscription, ascending OrderKey; see dispatch.Store.
func (s *Store) JobListGroup(ctx context.Context, p *dispatch.JobListGroupParams) ([]*dispatch.Job, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	filter := bson.D{
		{Key: "subscriptionId", Value: p.SubscriptionID},
		{Key: "messageGroup", Value: p.MessageGroup},
	}
	if p.BeforeOrderKey != "" {
		filter = append(filter, bson.E{Key: "orderKey", Value: bson.D{{Key: "$lt", Value: p.BeforeOrderKey}}})
	}
	if len(p.Statuses) > 0 {
		statuses := make(bson.A, len(p.Statuses))
		for i, st := range p.Statuses {
			statuses[i] = string(st)
		}
		filter = append(filter, bson.E{Key: "status", Value: bson.D{{Key: "$in", Value: statuses}}})
	}
	opts := options.Find().SetSort(sortOrderKey())
	if p.Limit > 0 {
		opts.SetLimit(int64(p.Limit))
	}
	jobs, err := s.findJobs(ctx, filter, opts)
	if err != nil {
		return nil, fmt.Errorf("list jobs of group %s: %w", p.MessageGroup, err)
	}
	return jobs, nil
}

// JobDeleteFinishedBefore deletes up to p.Limit finished jobs (COMPLETED,
// ERROR, CANCELLED) updated before p.Before, oldest first, and returns how
// many it deleted.
func (s *Store) JobDeleteFinishedBefore(ctx context.Context, p *dispatch.JobDeleteFinishedBeforeParams) (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	finished := bson.A{string(dispatch.StatusCompleted), string(dispatch.StatusError), string(dispatch.StatusCancelled)}
	n, err := deleteOldest(ctx, s.jobs, bson.D{
		{Key: "status", Value: bson.D{{Key: "$in", Value: finished}}},
		{Key: "updatedAt", Value: bson.D{{Key: "$lt", Value: ms(p.Before)}}},
	}, bson.D{{Key: "updatedAt", Value: 1}, {Key: "_id", Value: 1}}, p.Limit)
	if err != nil {
		return n, fmt.Errorf("delete finished jobs: %w", err)
	}
	return n, nil
}

func (s *Store) findJobs(ctx context.Context, filter bson.D, opts ...options.Lister[options.FindOptions]) ([]*dispatch.Job, error) {
	docs, err := findAll[jobDoc](ctx, s.jobs, filter, opts...)
	if err != nil {
		return nil, err
	}
	return s.jobsOf(docs)
}
