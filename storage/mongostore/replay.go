package mongostore

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/event"
	"github.com/hooklane/hooklane/subscription/replay"
)

// collReplays holds the replays (API.md §13).
const collReplays = "replays"

// replayDoc is the stored form of a replay.
type replayDoc struct {
	ID              string     `bson:"_id"`
	SubscriptionID  string     `bson:"subscriptionId"`
	Subscription    string     `bson:"subscription"`
	ClientID        *string    `bson:"clientId"`
	Status          string     `bson:"status"`
	Since           time.Time  `bson:"since"`
	Until           time.Time  `bson:"until"`
	EventTypes      []string   `bson:"eventTypes"`
	Redeliver       bool       `bson:"redeliver"`
	Scanned         int64      `bson:"scanned"`
	Matched         int64      `bson:"matched"`
	Created         int64      `bson:"created"`
	Error           string     `bson:"error"`
	CreatedAt       time.Time  `bson:"createdAt"`
	UpdatedAt       time.Time  `bson:"updatedAt"`
	CompletedAt     *time.Time `bson:"completedAt"`
	AfterReceivedAt time.Time  `bson:"afterReceivedAt"`
	AfterID         string     `bson:"afterId"`
	Owner           string     `bson:"owner"`
	// LeaseExpiresAt is stored as the zero time when free, so the claim
	// query is one range on an indexed field (FerretDB v1 has no partial
	// index, and null sorts apart).
	LeaseExpiresAt time.Time `bson:"leaseExpiresAt"`
	Version        int64     `bson:"version"`
}

func toReplayDoc(r *replay.Replay) replayDoc {
	d := replayDoc{
		ID: r.ID, SubscriptionID: r.SubscriptionID, Subscription: r.Subscription, ClientID: r.ClientID,
		Status: string(r.Status), Since: ms(r.Since), Until: ms(r.Until), EventTypes: r.EventTypes,
		Redeliver: r.Redeliver, Scanned: r.Scanned, Matched: r.Matched, Created: r.Created, Error: r.Error,
		CreatedAt: ms(r.CreatedAt), UpdatedAt: ms(r.UpdatedAt), CompletedAt: msPtr(r.CompletedAt),
		AfterReceivedAt: ms(r.AfterReceivedAt), AfterID: r.AfterID, Owner: r.Owner, Version: r.Version,
	}
	if r.LeaseExpiresAt != nil {
		d.LeaseExpiresAt = ms(*r.LeaseExpiresAt)
	}
	return d
}

func (d *replayDoc) asDomain() *replay.Replay {
	r := &replay.Replay{
		ID: d.ID, SubscriptionID: d.SubscriptionID, Subscription: d.Subscription, ClientID: d.ClientID,
		Status: replay.Status(d.Status), Since: utc(d.Since), Until: utc(d.Until), EventTypes: d.EventTypes,
		Redeliver: d.Redeliver, Scanned: d.Scanned, Matched: d.Matched, Created: d.Created, Error: d.Error,
		CreatedAt: utc(d.CreatedAt), UpdatedAt: utc(d.UpdatedAt), CompletedAt: utcPtr(d.CompletedAt),
		AfterReceivedAt: utc(d.AfterReceivedAt), AfterID: d.AfterID, Owner: d.Owner, Version: d.Version,
	}
	if lease := utc(d.LeaseExpiresAt); !lease.IsZero() {
		r.LeaseExpiresAt = &lease
	}
	return r
}

// ReplayInsert stores a new replay at version 1.
func (s *Store) ReplayInsert(ctx context.Context, r *replay.Replay) error {
	if err := s.check(); err != nil {
		return err
	}
	d := toReplayDoc(r)
	d.Version = 1
	if _, err := s.db.Collection(collReplays).InsertOne(ctx, d); err != nil {
		return fmt.Errorf("insert replay %s: %w", r.ID, translate(ctx, err))
	}
	r.Version = 1
	return nil
}

// ReplayGetByID returns one replay.
func (s *Store) ReplayGetByID(ctx context.Context, id string) (*replay.Replay, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	var d replayDoc
	if err := s.db.Collection(collReplays).FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d); err != nil {
		return nil, fmt.Errorf("get replay %s: %w", id, translate(ctx, err))
	}
	return d.asDomain(), nil
}

// ReplayList returns one page of replays, newest (highest id) first.
func (s *Store) ReplayList(ctx context.Context, p *replay.ListParams) (*replay.Page, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	filter := bson.D{}
	if p.SubscriptionID != "" {
		filter = append(filter, bson.E{Key: "subscriptionId", Value: p.SubscriptionID})
	}
	docs, next, err := findPage[replayDoc](ctx, s.db.Collection(collReplays), filter, p.Cursor, p.Limit,
		func(d *replayDoc) string { return d.ID })
	if err != nil {
		return nil, fmt.Errorf("list replays: %w", err)
	}
	page := &replay.Page{Replays: make([]*replay.Replay, len(docs)), NextCursor: next}
	for i := range docs {
		page.Replays[i] = docs[i].asDomain()
	}
	return page, nil
}

// ReplayListClaimable returns RUNNING replays whose lease is free or
// expired at p.Now, oldest first.
func (s *Store) ReplayListClaimable(ctx context.Context, p *replay.ListClaimableParams) ([]*replay.Replay, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 10
	}
	filter := bson.D{
		{Key: "status", Value: string(replay.StatusRunning)},
		{Key: "leaseExpiresAt", Value: bson.D{{Key: "$lte", Value: ms(p.Now)}}},
	}
	docs, err := findAll[replayDoc](ctx, s.db.Collection(collReplays), filter,
		options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetLimit(int64(limit)))
	if err != nil {
		return nil, fmt.Errorf("list claimable replays: %w", err)
	}
	out := make([]*replay.Replay, len(docs))
	for i := range docs {
		out[i] = docs[i].asDomain()
	}
	return out, nil
}

// ReplayUpdate replaces the stored replay when its version is r.Version
// (replaceVersioned: atomic on FerretDB too).
func (s *Store) ReplayUpdate(ctx context.Context, r *replay.Replay) error {
	if err := s.check(); err != nil {
		return err
	}
	d := toReplayDoc(r)
	d.Version = r.Version + 1
	if err := s.replaceVersioned(ctx, s.db.Collection(collReplays), r.ID, "version", r.Version, d); err != nil {
		return fmt.Errorf("update replay %s at version %d: %w", r.ID, r.Version, err)
	}
	r.Version = d.Version
	return nil
}

// EventListReceived returns a page of events in (receivedAt, _id) order
// after the given position (index receivedAt_id).
func (s *Store) EventListReceived(ctx context.Context, p *event.ListReceivedParams) ([]*event.Event, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 500
	}
	var filter bson.D
	if p.AfterID == "" {
		filter = bson.D{{Key: "receivedAt", Value: bson.D{{Key: "$gte", Value: ms(p.Since)}, {Key: "$lt", Value: ms(p.Until)}}}}
	} else {
		after := ms(p.AfterReceivedAt)
		filter = bson.D{
			{Key: "receivedAt", Value: bson.D{{Key: "$gte", Value: after}, {Key: "$lt", Value: ms(p.Until)}}},
			{Key: "$or", Value: bson.A{
				bson.D{{Key: "receivedAt", Value: bson.D{{Key: "$gt", Value: after}}}},
				bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: p.AfterID}}}},
			}},
		}
	}
	written := s.fanOutMarks.writtenCount()
	docs, err := findAll[eventDoc](ctx, s.events, filter,
		options.Find().SetSort(bson.D{{Key: "receivedAt", Value: 1}, {Key: "_id", Value: 1}}).SetLimit(int64(limit)))
	if err != nil {
		return nil, fmt.Errorf("list events by receivedAt: %w", err)
	}
	out := make([]*event.Event, len(docs))
	for i := range docs {
		if out[i], err = docs[i].asDomain(); err != nil {
			return nil, fmt.Errorf("list events by receivedAt: %w", err)
		}
	}
	if err := s.withWaitingMarks(ctx, out, written); err != nil {
		return nil, fmt.Errorf("list events by receivedAt: %w", err)
	}
	return out, nil
}

// JobCountUnfinished counts a subscription's PENDING, QUEUED and
// IN_PROGRESS jobs, at most p.Limit.
func (s *Store) JobCountUnfinished(ctx context.Context, p *replay.JobCountUnfinishedParams) (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	filter := bson.D{
		{Key: "subscriptionId", Value: p.SubscriptionID},
		{Key: "status", Value: bson.D{{Key: "$in", Value: bson.A{
			string(dispatch.StatusPending), string(dispatch.StatusQueued), string(dispatch.StatusInProgress),
		}}}},
	}
	n, err := s.jobs.CountDocuments(ctx, filter, options.Count().SetLimit(int64(max(p.Limit, 1))))
	if err != nil {
		return 0, fmt.Errorf("count unfinished jobs of %s: %w", p.SubscriptionID, translate(ctx, err))
	}
	return int(n), nil
}
