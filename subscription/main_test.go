package subscription

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that the cache's loop and ristretto's goroutines stop.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
