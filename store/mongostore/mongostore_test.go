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

	"github.com/hooklane/hooklane/store/mongostore"
	"github.com/hooklane/hooklane/store/storetest"
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
	return slog.New(slog.NewTextHandler(tLogWriter{tb}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tLogWriter struct{ tb testing.TB }

func (w tLogWriter) Write(p []byte) (int, error) {
	w.tb.Helper()
	w.tb.Log(string(p))
	return len(p), nil
}

// newStoreFunc returns a storetest.NewStoreFunc that opens each store on a
// fresh database (a run-unique prefix plus a counter) and drops it in
// cleanup, through an admin client of its own: a test may have closed the
// store already.
func newStoreFunc(t *testing.T) storetest.NewStoreFunc {
	t.Helper()
	uri := testMongoURI()
	admin, err := mongo.Connect(options.Client().ApplyURI(uri).SetServerSelectionTimeout(10 * time.Second))
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, admin.Disconnect(ctx))
	})
	prefix := fmt.Sprintf("hltest_%d_%d", os.Getpid(), time.Now().UnixNano()%1_000_000)
	var counter atomic.Int64
	return func(tb testing.TB) storetest.Store {
		tb.Helper()
		db := fmt.Sprintf("%s_%d", prefix, counter.Add(1))
		s, err := mongostore.Open(tb.Context(), mongostore.Config{URI: uri, Database: db, Logger: testLogger(tb)})
		require.NoError(tb, err, "open mongo store at %s (start the local stack: bash localstack/stack.sh start)", uri)
		tb.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(tb, admin.Database(db).Drop(ctx))
			require.NoError(tb, s.Close())
		})
		return s
	}
}

func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, newStoreFunc(t))
}
