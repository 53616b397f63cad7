package middleware_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: a shared
// request that was never cancelled, or a timer of a retry wait.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
