package localstack_test

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// No goleak: the mongo driver's connection-pool goroutines wind down
// asynchronously after Disconnect.

// TestMongoDriverAgainstStack checks the operations the Mongo store relies on
// against the stack's MongoDB-compatible server: insert, a unique index that
// rejects a duplicate, and findOneAndUpdate picking by sort.
func TestMongoDriverAgainstStack(t *testing.T) {
	t.Parallel()
	uri := cmp.Or(os.Getenv("HOOKLANE_TEST_MONGO_URI"), "mongodb://127.0.0.1:27017/")
	client, err := mongo.Connect(options.Client().ApplyURI(uri).SetServerSelectionTimeout(10 * time.Second))
	require.NoError(t, err)
	// t.Context is cancelled before cleanups run.
	cleanupCtx := context.WithoutCancel(t.Context())
	t.Cleanup(func() { require.NoError(t, client.Disconnect(cleanupCtx)) })
	ctx := t.Context()
	require.NoError(t, client.Ping(ctx, nil), "is the stack running? localstack/stack.sh start")

	db := client.Database("stacktest_" + rand.Text()[:12])
	t.Cleanup(func() { require.NoError(t, db.Drop(cleanupCtx)) })
	coll := db.Collection("jobs")

	_, err = coll.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys:    bson.D{{Key: "dedupKey", Value: 1}},
		Options: options.Index().SetUnique(true),
	})
	require.NoError(t, err)
	_, err = coll.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "j2"}, {Key: "dedupKey", Value: "k2"}, {Key: "state", Value: "QUEUED"}, {Key: "order", Value: 2}},
		bson.D{{Key: "_id", Value: "j1"}, {Key: "dedupKey", Value: "k1"}, {Key: "state", Value: "QUEUED"}, {Key: "order", Value: 1}},
	})
	require.NoError(t, err)

	_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "j3"}, {Key: "dedupKey", Value: "k1"}})
	require.True(t, mongo.IsDuplicateKeyError(err), "want a duplicate key error, got %v", err)

	var claimed bson.M
	err = coll.FindOneAndUpdate(ctx,
		bson.D{{Key: "state", Value: "QUEUED"}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "state", Value: "IN_PROGRESS"}}}},
		options.FindOneAndUpdate().SetSort(bson.D{{Key: "order", Value: 1}}).SetReturnDocument(options.After),
	).Decode(&claimed)
	require.NoError(t, err)
	require.Equal(t, "j1", claimed["_id"])
	require.Equal(t, "IN_PROGRESS", claimed["state"])

	err = coll.FindOne(ctx, bson.D{{Key: "_id", Value: "missing"}}).Err()
	require.ErrorIs(t, err, mongo.ErrNoDocuments)
}

// TestSQSServerAnswers checks the stack's SQS-compatible server answers a
// real SQS request (ListQueues, AWS JSON protocol); the queue/sqsqueue tests
// exercise it in depth.
func TestSQSServerAnswers(t *testing.T) {
	t.Parallel()
	endpoint := cmp.Or(os.Getenv("HOOKLANE_TEST_SQS_ENDPOINT"), "http://127.0.0.1:4566")
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, endpoint+"/", strings.NewReader("{}"))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS.ListQueues")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err, "is the stack running? localstack/stack.sh start")
	defer func() { require.NoError(t, resp.Body.Close()) }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
}
