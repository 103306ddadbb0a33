package mongostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/hooklane/hooklane/stream"
)

// statusEventDoc is a stream.Event as stored.
type statusEventDoc struct {
	ID      string        `bson:"_id"`
	Type    string        `bson:"type"`
	Time    time.Time     `bson:"time"`
	Subject string        `bson:"subject"`
	Data    statusDataDoc `bson:"data"`
}

// statusDataDoc is stream.Data as stored.
type statusDataDoc struct {
	JobID         string     `bson:"jobId,omitempty"`
	EventID       string     `bson:"eventId,omitempty"`
	EventType     string     `bson:"eventType,omitempty"`
	Subscription  string     `bson:"subscription,omitempty"`
	Subscriptions []string   `bson:"subscriptions,omitempty"`
	Status        string     `bson:"status,omitempty"`
	Attempt       int        `bson:"attempt,omitempty"`
	StatusCode    int        `bson:"statusCode,omitempty"`
	DurationMs    int64      `bson:"durationMs,omitempty"`
	Error         string     `bson:"error,omitempty"`
	MessageGroup  string     `bson:"messageGroup,omitempty"`
	NextAttemptAt *time.Time `bson:"nextAttemptAt,omitempty"`
	BlockedBy     string     `bson:"blockedBy,omitempty"`
	Worker        string     `bson:"worker,omitempty"`
	// The subscription.* events' members.
	ClientID            string     `bson:"clientId,omitempty"`
	Reason              string     `bson:"reason,omitempty"`
	ConsecutiveFailures int        `bson:"consecutiveFailures,omitempty"`
	NextProbeAt         *time.Time `bson:"nextProbeAt,omitempty"`
	Scanned             *int64     `bson:"scanned,omitempty"`
	Matched             *int64     `bson:"matched,omitempty"`
	Created             *int64     `bson:"created,omitempty"`
}

func toStatusEventDoc(e *stream.Event) statusEventDoc {
	d := e.Data
	return statusEventDoc{
		ID:      e.ID,
		Type:    e.Type,
		Time:    ms(e.Time),
		Subject: e.Subject,
		Data: statusDataDoc{
			JobID:         d.JobID,
			EventID:       d.EventID,
			EventType:     d.EventType,
			Subscription:  d.Subscription,
			Subscriptions: d.Subscriptions,
			Status:        d.Status,
			Attempt:       d.Attempt,
			StatusCode:    d.StatusCode,
			DurationMs:    d.DurationMs,
			Error:         d.Error,
			MessageGroup:  d.MessageGroup,
			NextAttemptAt: msPtr(d.NextAttemptAt),
			BlockedBy:     d.BlockedBy,
			Worker:        d.Worker,

			ClientID:            d.ClientID,
			Reason:              d.Reason,
			ConsecutiveFailures: d.ConsecutiveFailures,
			NextProbeAt:         msPtr(d.NextProbeAt),
			Scanned:             d.Scanned,
			Matched:             d.Matched,
			Created:             d.Created,
		},
	}
}

func (d *statusEventDoc) asDomain() stream.Event {
	x := d.Data
	return stream.Event{
		ID:      d.ID,
		Type:    d.Type,
		Time:    utc(d.Time),
		Subject: d.Subject,
		Data: stream.Data{
			JobID:         x.JobID,
			EventID:       x.EventID,
			EventType:     x.EventType,
			Subscription:  x.Subscription,
			Subscriptions: x.Subscriptions,
			Status:        x.Status,
			Attempt:       x.Attempt,
			StatusCode:    x.StatusCode,
			DurationMs:    x.DurationMs,
			Error:         x.Error,
			MessageGroup:  x.MessageGroup,
			NextAttemptAt: utcPtr(x.NextAttemptAt),
			BlockedBy:     x.BlockedBy,
			Worker:        x.Worker,

			ClientID:            x.ClientID,
			Reason:              x.Reason,
			ConsecutiveFailures: x.ConsecutiveFailures,
			NextProbeAt:         utcPtr(x.NextProbeAt),
			Scanned:             x.Scanned,
			Matched:             x.Matched,
			Created:             x.Created,
		},
	}
}

// insertIgnoringDuplicates inserts docs unordered and ignores the documents
// refused for a duplicate key, so writing the same documents again is a
// no-op. It returns the indexes (into docs) of the refused documents.
func insertIgnoringDuplicates(ctx context.Context, c *mongo.Collection, docs []any) (map[int]bool, error) {
	if len(docs) == 0 {
		return nil, nil
	}
	_, err := c.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	if err == nil {
		return nil, nil
	}
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || bwe.WriteConcernError != nil || len(bwe.WriteErrors) == 0 {
		return nil, translate(ctx, err)
	}
	dups := make(map[int]bool, len(bwe.WriteErrors))
	for _, we := range bwe.WriteErrors {
		if !mongo.IsDuplicateKeyError(we.WriteError) {
			return nil, translate(ctx, err)
		}
		dups[we.Index] = true
	}
	return dups, nil
}

// StatusEventInsertMany stores status events; an id already stored is
// skipped.
func (s *Store) StatusEventInsertMany(ctx context.Context, events []stream.Event) error {
	if err := s.check(); err != nil {
		return err
	}
	if err := s.insertStatusEvents(ctx, events); err != nil {
		return fmt.Errorf("insert status events: %w", err)
	}
	return nil
}

// insertStatusEvents stores status events, an id already stored skipped,
// in one insert shared with the concurrent writes of other callers (a
// group commit: under load one command carries many deliveries' events).
func (s *Store) insertStatusEvents(ctx context.Context, events []stream.Event) error {
	docs := make([]any, len(events))
	for i := range events {
		docs[i] = toStatusEventDoc(&events[i])
	}
	return s.statusInserts.Insert(ctx, docs)
}

// StatusEventListAfter returns up to p.Limit events in ascending id, with id
// > p.AfterID (when set) and Time ≥ p.Since (when set).
func (s *Store) StatusEventListAfter(ctx context.Context, p *stream.ListAfterParams) ([]stream.Event, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	filter := bson.D{}
	if p.AfterID != "" {
		filter = append(filter, bson.E{Key: "_id", Value: bson.D{{Key: "$gt", Value: p.AfterID}}})
	}
	if !p.Since.IsZero() {
		filter = append(filter, bson.E{Key: "time", Value: bson.D{{Key: "$gte", Value: ms(p.Since)}}})
	}
	opts := options.Find().SetSort(bson.D{{Key: "_id", Value: 1}})
	if p.Limit > 0 {
		opts.SetLimit(int64(p.Limit))
	}
	docs, err := findAll[statusEventDoc](ctx, s.statusEvents, filter, opts)
	if err != nil {
		return nil, fmt.Errorf("list status events after %q: %w", p.AfterID, err)
	}
	return statusEventsAsDomain(docs), nil
}

// StatusEventListBySubject returns the events of one job or event, in
// ascending id. It first runs a round of the status relay, so the events
// of every job write that returned before the call are listed.
func (s *Store) StatusEventListBySubject(ctx context.Context, subject string) ([]stream.Event, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if err := s.relay.flush(ctx); err != nil {
		return nil, fmt.Errorf("list status events of %s: %w", subject, err)
	}
	docs, err := findAll[statusEventDoc](ctx, s.statusEvents, bson.D{{Key: "subject", Value: subject}},
		options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("list status events of %s: %w", subject, err)
	}
	return statusEventsAsDomain(docs), nil
}

// StatusEventDeleteBefore deletes up to limit events older than before,
// oldest first, and returns how many it deleted.
func (s *Store) StatusEventDeleteBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	n, err := deleteOldest(ctx, s.statusEvents,
		bson.D{{Key: "time", Value: bson.D{{Key: "$lt", Value: ms(before)}}}},
		bson.D{{Key: "time", Value: 1}, {Key: "_id", Value: 1}}, limit)
	if err != nil {
		return n, fmt.Errorf("delete status events before %s: %w", before.Format(time.RFC3339), err)
	}
	return n, nil
}

func statusEventsAsDomain(docs []statusEventDoc) []stream.Event {
	out := make([]stream.Event, len(docs))
	for i := range docs {
		out[i] = docs[i].asDomain()
	}
	return out
}
