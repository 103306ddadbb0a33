package mongostore

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/hooklane/hooklane/storage/secretbox"
)

// SecretSealAll checks every stored secret against the store's box and
// seals those still in plain text: the migration run when a gateway starts
// (API.md §14). It walks every subscription and every job holding a
// signing secret (TASK jobs: the only jobs with secrets of their own), in
// one pass over each collection (FerretDB scans a collection for any
// filter other than an _id). A sealed value is opened to check the key:
// one that cannot be (sealed with another key, or with a key while the
// store has none) stops the walk with an error wrapping
// secretbox.ErrWrongKey or secretbox.ErrNoKey. A plain value is counted
// and, when the store has a box, sealed: only the secret fields are set
// ($set), on a subscription not changed since it was read (updatedAt), on
// a job whatever its state (its secrets never change, and its version is
// kept). It returns what it found.
func (s *Store) SecretSealAll(ctx context.Context) (secretbox.Census, error) {
	var c secretbox.Census
	if err := s.check(); err != nil {
		return c, err
	}
	up := s.box.Upgrade(&c)
	err := eachDoc(ctx, s.subscriptions, bson.D{}, func(d *subscriptionDoc) error {
		plain := c.Plain
		sealed, err := d.asDomain().MapSecrets(up)
		if err != nil || c.Plain == plain || s.box == nil {
			return err
		}
		nd := toSubscriptionDoc(sealed)
		_, err = s.subscriptions.UpdateOne(ctx, bson.D{{Key: "_id", Value: d.ID}, {Key: "updatedAt", Value: d.UpdatedAt}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "secrets", Value: nd.Secrets}, {Key: "auth", Value: nd.Auth}, {Key: "tls", Value: nd.TLS}, {Key: "destination", Value: nd.Destination}}}})
		if err != nil {
			return fmt.Errorf("rewrite subscription %s: %w", d.ID, translate(ctx, err))
		}
		return nil
	})
	if err != nil {
		return c, fmt.Errorf("seal secrets of subscriptions: %w", err)
	}
	err = eachDoc(ctx, s.jobs, bson.D{{Key: "secret", Value: bson.D{{Key: "$gt", Value: ""}}}}, func(d *jobDoc) error {
		plain := c.Plain
		sealed, err := d.asDomain().MapSecrets(up)
		if err != nil || c.Plain == plain || s.box == nil {
			return err
		}
		nd := toJobDoc(sealed)
		_, err = s.jobs.UpdateOne(ctx, bson.D{{Key: "_id", Value: d.ID}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "secret", Value: nd.Secret}, {Key: "auth", Value: nd.Auth}, {Key: "tls", Value: nd.TLS}}}})
		if err != nil {
			return fmt.Errorf("rewrite job %s: %w", d.ID, translate(ctx, err))
		}
		return nil
	})
	if err != nil {
		return c, fmt.Errorf("seal secrets of jobs: %w", err)
	}
	return c, nil
}

// eachDoc calls f with every document of c matching filter, streamed, and
// stops at f's first error.
func eachDoc[T any](ctx context.Context, c *mongo.Collection, filter bson.D, f func(*T) error) error {
	cur, err := c.Find(ctx, filter)
	if err != nil {
		return translate(ctx, err)
	}
	defer func() { _ = cur.Close(ctx) }() // a read-only cursor: nothing is lost if its close fails
	for cur.Next(ctx) {
		var d T
		if err := cur.Decode(&d); err != nil {
			return fmt.Errorf("decode: %w", err)
		}
		if err := f(&d); err != nil {
			return err
		}
	}
	if err := cur.Err(); err != nil {
		return translate(ctx, err)
	}
	return nil
}
