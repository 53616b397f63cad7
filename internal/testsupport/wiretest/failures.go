package wiretest

import (
	"fmt"
	"strings"
	"sync"
)

// Failures counts what a test's goroutines report as failed and keeps the
// first few messages, for the test's report. The zero value is ready; it
// is safe for concurrent use.
type Failures struct {
	mu   sync.Mutex
	n    int64    // guarded by mu
	errs []string // guarded by mu; at most failuresKept
}

// failuresKept is how many messages a Failures keeps.
const failuresKept = 8

// Add counts one failure, with its message.
func (f *Failures) Add(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if len(f.errs) < failuresKept {
		f.errs = append(f.errs, fmt.Sprintf(format, args...))
	}
}

// Report returns how many failures were added and the messages kept, one
// a line, joined by a newline and a tab.
func (f *Failures) Report() (n int64, first string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n, strings.Join(f.errs, "\n\t")
}
