package faults_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a fault's goroutine outlives Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
