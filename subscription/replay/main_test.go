package replay_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The stores and the in-process queue start goroutines: none may outlive
// the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
