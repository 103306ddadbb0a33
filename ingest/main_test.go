package ingest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that the store, queue and cache the pipeline tests start
// are all stopped.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
