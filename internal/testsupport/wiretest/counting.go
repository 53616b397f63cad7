package wiretest

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// CountingServer is a loopback source schema for load tests: it answers
// every request 200 with {"data":{"ok":true}} and counts its connections
// as it sees them (http.Server.ConnState): opened, closed, open now, and
// the most open at once. Its URL is the server's base URL.
type CountingServer struct {
	*httptest.Server
	requests atomic.Int64

	mu      sync.Mutex
	c       ConnCounts    // guarded by mu
	changed chan struct{} // guarded by mu: closed and replaced on every change
}

// ConnCounts is a snapshot of a CountingServer's connection counts. The
// counts since the mark start afresh at each Mark.
type ConnCounts struct {
	Opened, Closed, Open, MaxOpen    int
	OpenedSinceMark, ClosedSinceMark int
}

// NewCountingServer starts a CountingServer and closes it when the test
// ends.
func NewCountingServer(t testing.TB) *CountingServer {
	t.Helper()
	s := &CountingServer{changed: make(chan struct{})}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		s.requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"data":{"ok":true}}`)
	}))
	s.Config.ConnState = s.connState
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *CountingServer) connState(_ net.Conn, st http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch st {
	case http.StateNew:
		s.c.Opened++
		s.c.OpenedSinceMark++
		s.c.Open++
		s.c.MaxOpen = max(s.c.MaxOpen, s.c.Open)
	case http.StateClosed, http.StateHijacked:
		s.c.Closed++
		s.c.ClosedSinceMark++
		s.c.Open--
	default:
		return
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

// Counts returns the connection counts now.
func (s *CountingServer) Counts() ConnCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c
}

// Requests returns how many requests the server answered.
func (s *CountingServer) Requests() int64 { return s.requests.Load() }

// Mark starts counting opens and closes afresh, and resets the maximum of
// open connections to those open now.
func (s *CountingServer) Mark() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.c.OpenedSinceMark, s.c.ClosedSinceMark = 0, 0
	s.c.MaxOpen = s.c.Open
}

// WaitOpen waits until at most want connections are open, at most within
// (a connection a client closes is seen closed a moment later); it
// returns the last count.
func (s *CountingServer) WaitOpen(want int, within time.Duration) int {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		n, changed := s.c.Open, s.changed
		s.mu.Unlock()
		if n <= want {
			return n
		}
		select {
		case <-changed:
		case <-deadline.C:
			return s.Counts().Open
		}
	}
}

// OpenFDs counts this process's open descriptors, the one reading
// /proc/self/fd excepted; -1 where /proc is missing.
func OpenFDs() int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(entries) - 1
}

// The bound and the pace of WaitFDs.
const (
	fdWaitLimit = 5 * time.Second
	fdWaitPoll  = 10 * time.Millisecond
)

// WaitFDs waits until the open descriptors are back to want: connections
// that a client or server closes on its own goroutine are closed a moment
// after Close returns. It is a condition wait with a bound (nothing tells
// of a descriptor's close), not a timing assertion; it returns the last
// count.
func WaitFDs(want int) int {
	n := OpenFDs()
	for deadline := time.Now().Add(fdWaitLimit); n != want && want >= 0 && time.Now().Before(deadline); n = OpenFDs() {
		time.Sleep(fdWaitPoll)
	}
	return n
}
