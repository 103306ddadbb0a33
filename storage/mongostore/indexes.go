package mongostore

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// asc builds an ascending index key over fields.
func asc(fields ...string) bson.D {
	d := make(bson.D, len(fields))
	for i, f := range fields {
		d[i] = bson.E{Key: f, Value: 1}
	}
	return d
}

// indexes lists, per collection, the secondary indexes the queries rely on.
// Every index is named, so creating them again is a no-op.
//
// No index is partial, sparse or TTL: FerretDB v1 supports none of them
// (FerretDB issue #2448), and retention is done by pollers anyway. The
// not-fanned-out query uses {fannedOutAt, receivedAt} instead: fannedOutAt
// is stored as null until set, so the equality-to-null prefix confines the
// scan to the pending events, in receivedAt order.
func indexes() map[string][]mongo.IndexModel {
	named := func(name string, keys bson.D) mongo.IndexModel {
		return mongo.IndexModel{Keys: keys, Options: options.Index().SetName(name)}
	}
	unique := func(name string, keys bson.D) mongo.IndexModel {
		return mongo.IndexModel{Keys: keys, Options: options.Index().SetName(name).SetUnique(true)}
	}
	return map[string][]mongo.IndexModel{
		collEvents: {
			unique("dedupKey_unique", asc("dedupKey")),
			named("receivedAt", asc("receivedAt")),
			named("type", asc("event.type", "_id")),
			named("fannedOutAt_receivedAt", asc("fannedOutAt", "receivedAt")),
			named("receivedAt_id", asc("receivedAt", "_id")), // replay's walk
		},
		collJobs: {
			named("status_nextAttemptAt", asc("status", "nextAttemptAt")),
			named("status_updatedAt", asc("status", "updatedAt")),
			named("status_leaseExpiresAt", asc("status", "leaseExpiresAt")),
			named("subscriptionId_messageGroup_orderKey", asc("subscriptionId", "messageGroup", "orderKey")),
			named("eventId", asc("eventId")),
			named("createdAt", asc("createdAt")),
			named("subscriptionId_status", asc("subscriptionId", "status")),    // replay's backlog count
			named("operationalOutboxPending", asc("operationalOutboxPending")), // the relay's outbox list (missing on almost every job)
			named("statusOutboxPending", asc("statusOutboxPending")),           // the status relay's list (missing on every job relayed)
		},
		collReplays: {
			named("subscriptionId_id", asc("subscriptionId", "_id")),
			named("status_leaseExpiresAt", asc("status", "leaseExpiresAt")),
		},
		collSubscriptions: {
			unique("clientId_code_unique", asc("clientId", "code")),
		},
		collPools: {
			unique("code_unique", asc("code")),
		},
		collStatusEvents: {
			named("time", asc("time")),
			named("subject_id", asc("subject", "_id")),
		},
		collCircuits: {
			named("state_openedAt", asc("state", "openedAt")),
		},
		collHealthMinutes: {
			named("subscriptionId_start", asc("subscriptionId", "start")),
			named("start", asc("start")),
		},
		collHealthLast: {
			named("latestAt", asc("latestAt")),
		},
	}
}

// createIndexes creates every index of indexes(); existing ones are left
// alone. Event types need none: their _id is the code.
//
// The indexes are created one per command: FerretDB v1.24 panics (and drops
// the connection) on a createIndexes command that names two or more indexes
// which already exist, as every Open after the first does.
func (s *Store) createIndexes(ctx context.Context) error {
	for coll, models := range indexes() {
		for _, m := range models {
			if _, err := s.db.Collection(coll).Indexes().CreateOne(ctx, m); err != nil {
				return fmt.Errorf("create indexes of %s: %w", coll, translate(ctx, err))
			}
		}
	}
	return nil
}
