package pebblestore_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/hooklane/hooklane/storage/embedded"
	"github.com/hooklane/hooklane/storage/secretbox"
	"github.com/hooklane/hooklane/storage/storetest"
)

// testStore is the embedded store (SQLite control plane, this package's
// data plane) with the test-only repair the suite's fan-out cases use.
type testStore struct {
	*embedded.Store
}

// EventClearFannedOut implements storetest.FanOutClearer.
func (s testStore) EventClearFannedOut(ctx context.Context, ids []string) error {
	return s.Data().EventClearFannedOut(ctx, ids)
}

var (
	_ storetest.Store         = testStore{}
	_ storetest.FanOutClearer = testStore{}
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newStore opens the embedded store on a fresh directory in tb's temporary
// directory, with the gateway's default commit window.
func newStore(tb testing.TB) storetest.Store { //nolint:ireturn // a storetest.NewStoreFunc: the suite sees the port
	tb.Helper()
	s, err := embedded.Open(tb.Context(), embedded.Config{Dir: tb.TempDir()})
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, s.Close()) })
	return testStore{s}
}

func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, newStore)
}

func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, newStore)
}

func TestStoreSealed(t *testing.T) {
	t.Parallel()
	// Pebble's directory lock lets one store of a directory be open at
	// once; the suite opens a second one while the first is open, which
	// Share gives.
	var (
		mu   sync.Mutex
		open = map[string]*embedded.Store{}
	)
	storetest.RunSealed(t, storetest.SealedHarness{
		NewNamespace: func(tb testing.TB) string {
			tb.Helper()
			return tb.TempDir()
		},
		Open: func(tb testing.TB, dir string, box *secretbox.Box) storetest.Store {
			tb.Helper()
			mu.Lock()
			defer mu.Unlock()
			var s *embedded.Store
			var err error
			if first := open[dir]; first != nil {
				s, err = first.Share(tb.Context(), box)
			}
			if s == nil {
				s, err = embedded.Open(tb.Context(), embedded.Config{Dir: dir, Box: box})
				open[dir] = s
			}
			require.NoError(tb, err)
			tb.Cleanup(func() { require.NoError(tb, s.Close()) })
			return testStore{s}
		},
	})
}
