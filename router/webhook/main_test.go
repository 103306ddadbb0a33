package webhook_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run when a test leaves a goroutine behind: token
// requests, connections of closed transports.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
