package mongostore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/hooklane/hooklane/dispatch/health"
	"github.com/hooklane/hooklane/store"
)

// healthMinuteDoc is a health.Bucket as stored; _id is
// "<subscription id>/<start in unix ms>". Latency holds the histogram's
// non-zero counters under "b<index>" (an $inc on a path creates its
// parents as documents, never as arrays).
type healthMinuteDoc struct {
	ID             string           `bson:"_id"`
	SubscriptionID string           `bson:"subscriptionId"`
	Start          time.Time        `bson:"start"`
	Attempts       int64            `bson:"attempts"`
	Succeeded      int64            `bson:"succeeded"`
	Failed         int64            `bson:"failed"`
	Answered       int64            `bson:"answered"`
	Latency        map[string]int64 `bson:"latency"`
}

// healthLastDoc is a health.Last as stored; _id is the subscription id.
type healthLastDoc struct {
	ID            string     `bson:"_id"`
	LastSuccessAt *time.Time `bson:"lastSuccessAt"`
	LastFailureAt *time.Time `bson:"lastFailureAt"`
	LastError     string     `bson:"lastError"`
	LatestAt      time.Time  `bson:"latestAt"`
}

// HealthRecord adds the buckets with $inc upserts and merges the lasts
// with $max and a conditional $set. On MongoDB each update is atomic, so
// concurrent records add up; FerretDB v1 runs an $inc as a read then a
// write, so two instances flushing the same minute of the same
// subscription at the same moment may lose one's counts there.
func (s *Store) HealthRecord(ctx context.Context, p *health.RecordParams) error {
	if err := s.check(); err != nil {
		return err
	}
	if len(p.Buckets) > 0 {
		models := make([]mongo.WriteModel, 0, len(p.Buckets))
		for i := range p.Buckets {
			b := &p.Buckets[i]
			start := ms(b.Start)
			inc := bson.D{
				{Key: "attempts", Value: b.Attempts},
				{Key: "succeeded", Value: b.Succeeded},
				{Key: "failed", Value: b.Failed},
				{Key: "answered", Value: b.Answered},
			}
			for j, n := range b.Latency {
				if n != 0 {
					inc = append(inc, bson.E{Key: "latency.b" + strconv.Itoa(j), Value: n})
				}
			}
			models = append(models, mongo.NewUpdateOneModel().
				SetFilter(bson.D{{Key: "_id", Value: b.SubscriptionID + "/" + strconv.FormatInt(start.UnixMilli(), 10)}}).
				SetUpdate(bson.D{
					{Key: "$setOnInsert", Value: bson.D{{Key: "subscriptionId", Value: b.SubscriptionID}, {Key: "start", Value: start}}},
					{Key: "$inc", Value: inc},
				}).SetUpsert(true))
		}
		if err := s.upsertBuckets(ctx, models); err != nil {
			return fmt.Errorf("record health buckets: %w", translate(ctx, err))
		}
	}
	for i := range p.Lasts {
		if err := s.mergeLast(ctx, &p.Lasts[i]); err != nil {
			return err
		}
	}
	return nil
}

// upsertBuckets runs the bucket upserts unordered. Two first upserts of
// one minute may race on its insert: the loser's write fails with a
// duplicate key and nothing of it is applied, so exactly those writes are
// run again (they then find the document and add to it); the writes that
// succeeded are not repeated, which would count them twice.
func (s *Store) upsertBuckets(ctx context.Context, models []mongo.WriteModel) error {
	for attempt := 0; ; attempt++ {
		_, err := s.healthMinutes.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
		if err == nil {
			return nil
		}
		bwe, ok := errors.AsType[mongo.BulkWriteException](err)
		if !ok || attempt == 2 || bwe.WriteConcernError != nil || len(bwe.WriteErrors) == 0 {
			return err //nolint:wrapcheck // wrapped by the caller with what was being written
		}
		again := make([]mongo.WriteModel, 0, len(bwe.WriteErrors))
		for _, we := range bwe.WriteErrors {
			if !mongo.IsDuplicateKeyError(we.WriteError) && !ferretUniqueViolation(we.WriteError) {
				return err //nolint:wrapcheck // wrapped by the caller with what was being written
			}
			again = append(again, models[we.Index])
		}
		models = again
	}
}

func (s *Store) mergeLast(ctx context.Context, l *health.Last) error {
	latest := l.LastSuccessAt
	if l.LastFailureAt != nil && (latest == nil || l.LastFailureAt.After(*latest)) {
		latest = l.LastFailureAt
	}
	if latest == nil {
		return nil
	}
	maxes := bson.D{{Key: "latestAt", Value: ms(*latest)}}
	if l.LastSuccessAt != nil {
		maxes = append(maxes, bson.E{Key: "lastSuccessAt", Value: ms(*l.LastSuccessAt)})
	}
	id := bson.D{{Key: "_id", Value: l.SubscriptionID}}
	var err error
	for range 2 { // two first upserts may race on the insert: the loser retries and finds the document
		_, err = s.healthLast.UpdateOne(ctx, id, bson.D{{Key: "$max", Value: maxes}}, options.UpdateOne().SetUpsert(true))
		if err == nil || !mongo.IsDuplicateKeyError(err) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("record health of subscription %s: %w", l.SubscriptionID, translate(ctx, err))
	}
	if l.LastFailureAt == nil {
		return nil
	}
	at := ms(*l.LastFailureAt)
	// The failure and its error replace the stored ones only when later.
	if _, err := s.healthLast.UpdateOne(ctx,
		bson.D{{Key: "_id", Value: l.SubscriptionID}, {Key: "$or", Value: bson.A{
			bson.D{{Key: "lastFailureAt", Value: nil}},
			bson.D{{Key: "lastFailureAt", Value: bson.D{{Key: "$lt", Value: at}}}},
		}}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "lastFailureAt", Value: at}, {Key: "lastError", Value: l.LastError}}}}); err != nil {
		return fmt.Errorf("record health of subscription %s: %w", l.SubscriptionID, translate(ctx, err))
	}
	return nil
}

// HealthGet returns a subscription's Last and its buckets since since.
func (s *Store) HealthGet(ctx context.Context, subscriptionID string, since time.Time) (*health.Last, []health.Bucket, error) {
	if err := s.check(); err != nil {
		return nil, nil, err
	}
	var last *health.Last
	var ld healthLastDoc
	err := translate(ctx, s.healthLast.FindOne(ctx, bson.D{{Key: "_id", Value: subscriptionID}}).Decode(&ld))
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return nil, nil, fmt.Errorf("get health of subscription %s: %w", subscriptionID, err)
	default:
		last = &health.Last{
			SubscriptionID: subscriptionID, LastSuccessAt: utcPtr(ld.LastSuccessAt),
			LastFailureAt: utcPtr(ld.LastFailureAt), LastError: ld.LastError,
		}
	}
	docs, err := findAll[healthMinuteDoc](ctx, s.healthMinutes,
		bson.D{{Key: "subscriptionId", Value: subscriptionID}, {Key: "start", Value: bson.D{{Key: "$gte", Value: ms(since)}}}},
		options.Find().SetSort(bson.D{{Key: "start", Value: 1}}))
	if err != nil {
		return nil, nil, fmt.Errorf("get health of subscription %s: %w", subscriptionID, err)
	}
	n := health.Buckets()
	buckets := make([]health.Bucket, len(docs))
	for i, d := range docs {
		b := health.Bucket{
			SubscriptionID: subscriptionID, Start: utc(d.Start), Attempts: d.Attempts, Succeeded: d.Succeeded,
			Failed: d.Failed, Answered: d.Answered, Latency: make([]int64, n),
		}
		for j := range n {
			b.Latency[j] = d.Latency["b"+strconv.Itoa(j)]
		}
		buckets[i] = b
	}
	return last, buckets, nil
}

// HealthDeleteBefore deletes old buckets and lasts.
func (s *Store) HealthDeleteBefore(ctx context.Context, p *health.DeleteBeforeParams) (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 500
	}
	n, err := deleteOldest(ctx, s.healthMinutes, bson.D{{Key: "start", Value: bson.D{{Key: "$lt", Value: ms(p.BucketsBefore)}}}},
		bson.D{{Key: "start", Value: 1}}, limit)
	if err != nil {
		return n, fmt.Errorf("delete old health buckets: %w", err)
	}
	m, err := deleteOldest(ctx, s.healthLast, bson.D{{Key: "latestAt", Value: bson.D{{Key: "$lt", Value: ms(p.LastBefore)}}}},
		bson.D{{Key: "latestAt", Value: 1}}, limit)
	if err != nil {
		return n + m, fmt.Errorf("delete old health records: %w", err)
	}
	return n + m, nil
}
