package fault

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestTimeoutErrors: both bounds' errors say which setting passed (and, for
// the header bound, how much of it went to waiting for a connection), match
// context.DeadlineExceeded and report a timeout, as net.Error does.
func TestTimeoutErrors(t *testing.T) {
	for _, tc := range []struct {
		err  interface{ Timeout() bool }
		want string
	}{
		{&HeaderTimeoutError{Bound: 2 * time.Second}, "no response headers within 2s (header_timeout)"},
		{&HeaderTimeoutError{Bound: 2 * time.Second, Queued: 1500*time.Millisecond + 400*time.Microsecond}, "no response headers within 2s (header_timeout), 1.5s of it waiting for a connection"},
		{&RequestTimeoutError{Bound: 3 * time.Second}, "request not complete within 3s (request_timeout)"},
	} {
		err := tc.err.(error)
		if err.Error() != tc.want {
			t.Errorf("Error() = %q, want %q", err, tc.want)
		}
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			t.Errorf("%q: errors.Is matches DeadlineExceeded = %v, Canceled = %v; want true, false", err, errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled))
		}
		if !tc.err.Timeout() {
			t.Errorf("%q: Timeout() = false", err)
		}
	}
}
