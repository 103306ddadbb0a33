package mongostore

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// EventClearFannedOut puts events back in the state a crash between the
// event write and the fan-out leaves (storetest.FanOutClearer).
func (s *Store) EventClearFannedOut(ctx context.Context, ids []string) error {
	if err := s.check(); err != nil {
		return err
	}
	_, err := s.events.UpdateMany(ctx,
		bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "fannedOutAt", Value: nil}}}})
	if err != nil {
		return fmt.Errorf("clear fannedOutAt: %w", translate(ctx, err))
	}
	return nil
}
