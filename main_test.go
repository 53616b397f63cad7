package transport_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: a
// connection, a pool timer or a guard that outlived its invoker.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
