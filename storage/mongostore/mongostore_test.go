package mongostore_test

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.uber.org/goleak"

	"github.com/hooklane/hooklane/storage/mongostore"
	"github.com/hooklane/hooklane/storage/secretbox"
	"github.com/hooklane/hooklane/storage/storetest"
)

var _ storetest.Store = (*mongostore.Store)(nil)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testMongoURI is the server the tests use: HOOKLANE_TEST_MONGO_URI, by
// default a local one (start it with `bash localstack/stack.sh start`).
// There is no skip when it is absent: the tests fail, loudly.
func testMongoURI() string {
	return cmp.Or(os.Getenv("HOOKLANE_TEST_MONGO_URI"), "mongodb://127.0.0.1:27017/")
}

// testLogger sends the adapter's logs to t.Log.
func testLogger(tb testing.TB) *slog.Logger {
	tb.Helper()
	return slog.New(slog.NewTextHandler(tLogWriter{tb}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tLogWriter struct{ tb testing.TB }

func (w tLogWriter) Write(p []byte) (int, error) {
	w.tb.Helper()
	w.tb.Log(string(p))
	return len(p), nil
}

// testEnv hands out fresh databases on the test server: a run-unique prefix
// plus a counter. It drops each in cleanup through an admin client of its
// own, because a test may have closed the store already.
type testEnv struct {
	uri     string
	admin   *mongo.Client
	prefix  string
	counter atomic.Int64
}

func newTestEnv(t testing.TB) *testEnv {
	t.Helper()
	uri := testMongoURI()
	admin, err := mongo.Connect(options.Client().ApplyURI(uri).SetServerSelectionTimeout(10 * time.Second))
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, admin.Disconnect(ctx))
	})
	return &testEnv{
		uri:    uri,
		admin:  admin,
		prefix: fmt.Sprintf("hltest_%d_%d", os.Getpid(), time.Now().UnixNano()%1_000_000),
	}
}

// newDatabase returns a fresh database name, dropped when tb ends.
func (e *testEnv) newDatabase(tb testing.TB) string {
	tb.Helper()
	db := fmt.Sprintf("%s_%d", e.prefix, e.counter.Add(1))
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(tb, e.admin.Database(db).Drop(ctx))
	})
	return db
}

// open opens a store on database db, closed when tb ends (before the drop).
func (e *testEnv) open(tb testing.TB, db string, mod func(cfg *mongostore.Config)) *mongostore.Store {
	tb.Helper()
	cfg := mongostore.Config{URI: e.uri, Database: db, Logger: testLogger(tb)}
	if mod != nil {
		mod(&cfg)
	}
	s, err := mongostore.Open(tb.Context(), cfg)
	require.NoError(tb, err, "open mongo store at %s (start the local stack: bash localstack/stack.sh start)", e.uri)
	tb.Cleanup(func() { require.NoError(tb, s.Close()) })
	return s
}

// newStoreFunc is the storetest harness: one fresh database per store.
func (e *testEnv) newStoreFunc() storetest.NewStoreFunc {
	return func(tb testing.TB) storetest.Store {
		tb.Helper()
		return e.open(tb, e.newDatabase(tb), nil)
	}
}

func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, newTestEnv(t).newStoreFunc())
}

// TestStoreHoldingStatusEvents runs the conformance suite with job writes
// holding their status events for the relay (MongoDB's path) on whatever
// server the tests use, FerretDB's write guards included.
func TestStoreHoldingStatusEvents(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	storetest.Run(t, func(tb testing.TB) storetest.Store {
		tb.Helper()
		s := env.open(tb, env.newDatabase(tb), nil)
		s.SetHoldStatusEvents(true)
		return s
	})
}

func TestStoreSealed(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	storetest.RunSealed(t, storetest.SealedHarness{
		NewNamespace: env.newDatabase,
		Open: func(tb testing.TB, db string, box *secretbox.Box) storetest.Store {
			tb.Helper()
			return env.open(tb, db, func(cfg *mongostore.Config) { cfg.Box = box })
		},
	})
}
