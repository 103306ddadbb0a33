package mongostore

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/hooklane/hooklane/store"
)

// Generation counters kept in the meta collection, one document each.
const (
	genSubscriptions = "subscriptions"
	genEventTypes    = "eventTypes"
)

// generationDoc is one counter of the meta collection.
type generationDoc struct {
	ID         string `bson:"_id"`
	Generation int64  `bson:"generation"`
}

// initGenerations creates the counters at 0 unless they exist, so that
// bumps rarely need their upsert.
func (s *Store) initGenerations(ctx context.Context) error {
	docs := []any{generationDoc{ID: genSubscriptions}, generationDoc{ID: genEventTypes}}
	if _, err := insertIgnoringDuplicates(ctx, s.meta, docs); err != nil {
		return fmt.Errorf("create generation counters: %w", err)
	}
	return nil
}

// bumpGeneration increments a counter ($inc, upserted), so other instances
// notice the write. It runs after the write it announces: a reader that sees
// the new number also sees the write.
//
// On FerretDB v1 an $inc is a read then a write, so two concurrent bumps may
// add one in all. That is harmless: both bumps read before either wrote, so
// both announced writes were done before the number moved, and a reader that
// sees it move sees both. Two concurrent upserts may both try the insert on
// any server; the loser retries, and then finds the document.
func (s *Store) bumpGeneration(ctx context.Context, name string) error {
	var err error
	for range 3 {
		_, err = s.meta.UpdateOne(ctx, bson.D{{Key: "_id", Value: name}},
			bson.D{{Key: "$inc", Value: bson.D{{Key: "generation", Value: int64(1)}}}},
			options.UpdateOne().SetUpsert(true))
		if err == nil || !mongo.IsDuplicateKeyError(err) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("bump %s generation: %w", name, translate(ctx, err))
	}
	return nil
}

// generation reads a counter; 0 before the first write.
func (s *Store) generation(ctx context.Context, name string) (int64, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	var doc generationDoc
	err := s.meta.FindOne(ctx, bson.D{{Key: "_id", Value: name}}).Decode(&doc)
	if err := translate(ctx, err); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return 0, nil
		}
		return 0, fmt.Errorf("read %s generation: %w", name, err)
	}
	return doc.Generation, nil
}
