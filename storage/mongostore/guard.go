package mongostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/hooklane/hooklane/store"
)

// guardStaleAfter is how old a write guard must be before another writer may
// take it over. A guard lives for one ReplaceOne (milliseconds); one this old
// was left by a process that died holding it.
const guardStaleAfter = 30 * time.Second

// guardReleaseTimeout bounds the deletion of a guard, which runs even when
// the caller's ctx is cancelled.
const guardReleaseTimeout = 5 * time.Second

// guardDoc is a write guard: while it exists, one writer is moving one
// document from one version to the next.
type guardDoc struct {
	// ID is "<collection>/<document id>@<new version>".
	ID        string    `bson:"_id"`
	CreatedAt time.Time `bson:"createdAt"`
}

// replaceVersioned replaces document id of c with doc when its versionField
// equals expected: the optimistic lock of JobUpdate, EventTypeUpdate and
// SubscriptionUpdate. It returns store.ErrStale (an ErrConflict) when the
// stored version differs (or another writer is moving it from the same
// version right now) and store.ErrNotFound when the document is gone.
//
// On MongoDB the filtered ReplaceOne alone is atomic. FerretDB v1 runs it as
// a read followed by an unconditional write, so two writers holding the same
// version could both succeed. On FerretDB (s.writeGuards) the adapter
// therefore first takes a guard, a document whose _id names the version
// step: a unique _id insert is atomic on every server, so only one writer
// per step gets past it. The guard is deleted after the replace; one left
// behind by a crash is taken over once stale (guardStaleAfter). MongoDB is
// spared the two extra writes.
func (s *Store) replaceVersioned(ctx context.Context, c *mongo.Collection, id, versionField string, expected int64, doc any) error {
	if !s.writeGuards {
		return s.replaceIfVersion(ctx, c, id, versionField, expected, doc)
	}
	key := fmt.Sprintf("%s/%s@%d", c.Name(), id, expected+1)
	acquired, err := s.acquireGuard(ctx, key)
	if err != nil {
		return err
	}
	if !acquired {
		return s.missingOr(ctx, c, id, store.ErrStale)
	}
	defer s.releaseGuard(ctx, key)
	return s.replaceIfVersionByID(ctx, c, id, versionField, expected, doc)
}

// replaceIfVersionByID is replaceIfVersion for FerretDB, under a write
// guard: read the version, then replace filtered on _id alone. FerretDB v1
// on SQLite pushes down to SQL only a filter that is exactly {_id: …}; any
// other filter scans and decodes the whole collection, which made every
// job update cost O(jobs). The guard serializes every writer of this version
// step, and steps follow one another, so the read-then-replace cannot lose
// an update.
func (s *Store) replaceIfVersionByID(ctx context.Context, c *mongo.Collection, id, versionField string, expected int64, doc any) error {
	var cur bson.M
	err := c.FindOne(withCommandTag(ctx, tagGuard), bson.D{{Key: "_id", Value: id}}).Decode(&cur)
	if err != nil {
		return translate(ctx, err)
	}
	if v, ok := asInt64(cur[versionField]); !ok || v != expected {
		return store.ErrStale
	}
	res, err := c.ReplaceOne(ctx, bson.D{{Key: "_id", Value: id}}, doc)
	if err != nil {
		return translate(ctx, err)
	}
	if res.MatchedCount == 0 {
		return store.ErrNotFound
	}
	return nil
}

func asInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int32:
		return int64(x), true
	case float64:
		return int64(x), x == float64(int64(x))
	}
	return 0, false
}

// replaceIfVersion is the filtered replace itself.
func (s *Store) replaceIfVersion(ctx context.Context, c *mongo.Collection, id, versionField string, expected int64, doc any) error {
	res, err := c.ReplaceOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: versionField, Value: expected}}, doc)
	if err != nil {
		return translate(ctx, err)
	}
	if res.MatchedCount == 0 {
		return s.missingOr(ctx, c, id, store.ErrStale)
	}
	return nil
}

// isFerretDB reports whether the server is FerretDB, whose buildInfo answer
// carries a ferretdbVersion field.
func (s *Store) isFerretDB(ctx context.Context) (bool, error) {
	var info struct {
		FerretDBVersion string `bson:"ferretdbVersion"`
	}
	if err := s.db.RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info); err != nil {
		return false, fmt.Errorf("read build info: %w", translate(ctx, err))
	}
	return info.FerretDBVersion != "", nil
}

// acquireGuard inserts the guard key; false when a live writer holds it.
func (s *Store) acquireGuard(ctx context.Context, key string) (bool, error) {
	ctx = withCommandTag(ctx, tagGuard)
	now := ms(s.nowFunc())
	for range 2 {
		_, err := s.guards.InsertOne(ctx, guardDoc{ID: key, CreatedAt: now})
		if err == nil {
			return true, nil
		}
		if !mongo.IsDuplicateKeyError(err) {
			return false, fmt.Errorf("take write guard %s: %w", key, translate(ctx, err))
		}
		// Held. Delete it only when stale; the delete is filtered on the
		// age, so of several writers at most one removes a given guard.
		res, err := s.guards.DeleteOne(ctx, bson.D{
			{Key: "_id", Value: key},
			{Key: "createdAt", Value: bson.D{{Key: "$lt", Value: now.Add(-guardStaleAfter)}}},
		})
		if err != nil {
			return false, fmt.Errorf("take over write guard %s: %w", key, translate(ctx, err))
		}
		if res.DeletedCount == 0 {
			return false, nil
		}
		s.logger.WarnContext(ctx, "stale write guard taken over", "guard", key)
	}
	return false, nil
}

// guardWaits is how long acquireGuardWaiting waits before each further
// try: a guard is held for a few commands (a JobUpdate, or the status
// relay clearing what it moved), so one that is held is usually free
// again within milliseconds.
func guardWaits() []time.Duration {
	return []time.Duration{2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond}
}

// acquireGuardWaiting is acquireGuard, tried again a few times over
// about 40 ms while a live writer holds the guard. Waiting never lets a
// stale write through: the holder is taken over only as acquireGuard
// does, and the taker reads the version under the guard.
func (s *Store) acquireGuardWaiting(ctx context.Context, key string) (bool, error) {
	for _, wait := range guardWaits() {
		acquired, err := s.acquireGuard(ctx, key)
		if err != nil || acquired {
			return acquired, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, fmt.Errorf("wait for write guard %s: %w", key, ctx.Err())
		case <-t.C:
		}
	}
	return s.acquireGuard(ctx, key)
}

// releaseGuard deletes a guard, also when ctx is cancelled: a guard left
// behind blocks its version step until it is stale.
func (s *Store) releaseGuard(ctx context.Context, key string) {
	ctx, cancel := context.WithTimeout(withCommandTag(context.WithoutCancel(ctx), tagGuard), guardReleaseTimeout)
	defer cancel()
	if _, err := s.guards.DeleteOne(ctx, bson.D{{Key: "_id", Value: key}}); err != nil {
		s.logger.WarnContext(ctx, "release write guard", "guard", key, "error", err)
	}
}

// missingOr returns store.ErrNotFound when document id of c does not exist,
// else otherwise.
func (s *Store) missingOr(ctx context.Context, c *mongo.Collection, id string, otherwise error) error {
	// FindOne on _id alone: the one filter FerretDB v1 pushes down.
	err := c.FindOne(ctx, bson.D{{Key: "_id", Value: id}}, options.FindOne().SetProjection(bson.D{{Key: "_id", Value: 1}})).Err()
	switch {
	case errors.Is(err, mongo.ErrNoDocuments):
		return store.ErrNotFound
	case err != nil:
		return translate(ctx, err)
	}
	return otherwise
}
