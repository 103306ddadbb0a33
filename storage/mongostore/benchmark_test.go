package mongostore_test

import (
	"testing"

	"github.com/hooklane/hooklane/storage/storetest"
)

// BenchmarkStore runs the shared store benchmarks, one fresh database each.
func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, newTestEnv(b).newStoreFunc())
}
