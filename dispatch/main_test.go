package dispatch_test

import (
	"testing"

	"go.uber.org/goleak"
)

// QueueDue runs its writes on goroutines of its own, and the stores and the
// in-process queue start some: none may outlive the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
