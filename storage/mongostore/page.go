package mongostore

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Page sizes (API.md: default 50, max 500).
const (
	pageLimitDefault = 50
	pageLimitMax     = 500
)

// pageLimit clamps a requested page size to 1..pageLimitMax, 0 meaning the
// default.
func pageLimit(n int) int {
	switch {
	case n <= 0:
		return pageLimitDefault
	case n > pageLimitMax:
		return pageLimitMax
	}
	return n
}

// appendRange adds since ≤ field < until to filter, each bound when set.
func appendRange(filter bson.D, field string, since, until time.Time) bson.D {
	r := bson.D{}
	if !since.IsZero() {
		r = append(r, bson.E{Key: "$gte", Value: ms(since)})
	}
	if !until.IsZero() {
		r = append(r, bson.E{Key: "$lt", Value: ms(until)})
	}
	if len(r) == 0 {
		return filter
	}
	return append(filter, bson.E{Key: field, Value: r})
}

// findPage returns one page of a newest-first (_id descending) list. The
// cursor is the last id of the previous page; one extra document is read to
// know whether another page follows.
func findPage[T any](ctx context.Context, c *mongo.Collection, filter bson.D, cursor string, limit int, idOf func(*T) string) ([]T, string, error) {
	limit = pageLimit(limit)
	if cursor != "" {
		filter = append(filter, bson.E{Key: "_id", Value: bson.D{{Key: "$lt", Value: cursor}}})
	}
	docs, err := findAll[T](ctx, c, filter, options.Find().
		SetSort(bson.D{{Key: "_id", Value: -1}}).SetLimit(int64(limit+1)))
	if err != nil {
		return nil, "", err
	}
	if len(docs) <= limit {
		return docs, "", nil
	}
	docs = docs[:limit]
	return docs, idOf(&docs[limit-1]), nil
}
