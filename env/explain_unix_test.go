//go:build unix

package env_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
)

// TestExplainReadsEachFileOnce: Explain reads a file once, as Load does, so
// that what it explains is what it loaded; a file it read twice could
// change between the reads, and a pipe, written once, would block the
// second read for ever.
func TestExplainReadsEachFileOnce(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "config.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	go func() {
		// Opening a pipe for writing waits for its reader.
		if err := os.WriteFile(fifo, []byte("source_schemas:\n  products:\n    url: http://products/graphql\n"), 0o600); err != nil {
			t.Errorf("writing the pipe: %v", err)
		}
	}()
	done := make(chan error, 1)
	go func() {
		_, explained, err := env.Loader{}.Explain(fifo)
		if err == nil && explained["products"][0].Origin != "file "+fifo {
			t.Errorf("url's origin = %q, want the pipe", explained["products"][0].Origin)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Explain: %v", err)
		}
	case <-time.After(10 * time.Second):
		// Unblock the second read, so that the test's goroutine ends.
		_ = os.WriteFile(fifo, nil, 0o600)
		t.Fatal("Explain read the pipe twice: still blocked after 10s")
	}
}
