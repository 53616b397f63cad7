package backend_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/backend"
)

// newRequest returns a request to a source schema. body "" sends none;
// replayable sets GetBody, as http.NewRequest does for a strings.Reader.
func newRequest(t *testing.T, ctx context.Context, method, body string, replayable bool, header http.Header) *http.Request {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://schema.test/graphql", r)
	if err != nil {
		t.Fatal(err)
	}
	if !replayable {
		req.GetBody = nil
	}
	for k, v := range header {
		req.Header[k] = v
	}
	return req
}

// refusedErr is how net/http's bundled HTTP/2 transport reports a refused
// stream; its types are not exported, so Resend matches the text.
var refusedErr = errors.New("http2: server sent GOAWAY and closed the connection; LastStreamID=1, ErrCode=REFUSED_STREAM, debug=\"\"")

// TestResend is Resend's decision table: for a request and an error, the
// reason it gives on repeated failures with one Tries, and how many times
// before it says NoResend.
func TestResend(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	key := http.Header{"Idempotency-Key": {"k-1"}}
	reset := errors.New("read: connection reset by peer")
	headerTimeout := fmt.Errorf("net/http: request canceled: %w", &fault.HeaderTimeoutError{Bound: 1})
	for _, tc := range []struct {
		name       string
		ctx        context.Context
		method     string
		body       string
		replayable bool
		header     http.Header
		err        error
		want       backend.Reason
		times      int // how often want comes before NoResend
	}{
		{"no error", nil, http.MethodGet, "", false, nil, nil, backend.NoResend, 0},

		{"caller gave up, drained", canceled, http.MethodPost, "q", true, nil, backend.ErrDrained, backend.NoResend, 0},
		{"caller gave up, refused", canceled, http.MethodPost, "q", true, nil, refusedErr, backend.NoResend, 0},
		{"caller gave up, stale GET", canceled, http.MethodGet, "", false, nil, &backend.AttemptError{Err: reset, Reused: true}, backend.NoResend, 0},

		{"drained", nil, http.MethodPost, "q", true, nil, backend.ErrDrained, backend.Moved, backend.MaxMoves},
		{"drained, body not replayable", nil, http.MethodPost, "q", false, nil, backend.ErrDrained, backend.Moved, backend.MaxMoves},
		{"drained, wrapped", nil, http.MethodPost, "q", false, nil, &backend.AttemptError{Err: fmt.Errorf("schema x: %w", backend.ErrDrained), Reused: true}, backend.Moved, backend.MaxMoves},

		{"header timeout", nil, http.MethodGet, "", false, nil, headerTimeout, backend.NoResend, 0},
		{"header timeout on a reused connection", nil, http.MethodGet, "", false, nil, &backend.AttemptError{Err: headerTimeout, Reused: true}, backend.NoResend, 0},
		{"header timeout, refused text", nil, http.MethodPost, "q", true, nil, fmt.Errorf("%w: %w", refusedErr, &fault.HeaderTimeoutError{Bound: 1}), backend.NoResend, 0},

		{"unsent POST with GetBody", nil, http.MethodPost, "q", true, nil, &backend.AttemptError{Err: reset, Unsent: true}, backend.Unsent, backend.MaxUnsent},
		{"unsent POST on a reused connection", nil, http.MethodPost, "q", true, nil, &backend.AttemptError{Err: reset, Reused: true, Unsent: true}, backend.Unsent, backend.MaxUnsent},
		{"unsent POST without GetBody", nil, http.MethodPost, "q", false, nil, &backend.AttemptError{Err: reset, Unsent: true}, backend.NoResend, 0},
		{"unsent, header timeout", nil, http.MethodGet, "", false, nil, &backend.AttemptError{Err: headerTimeout, Unsent: true}, backend.NoResend, 0},
		{"caller gave up, unsent", canceled, http.MethodGet, "", false, nil, &backend.AttemptError{Err: reset, Unsent: true}, backend.NoResend, 0},

		{"refused POST with GetBody", nil, http.MethodPost, "q", true, nil, refusedErr, backend.Refused, backend.MaxRefused},
		{"refused POST without GetBody", nil, http.MethodPost, "q", false, nil, refusedErr, backend.NoResend, 0},
		{"refused GET without body", nil, http.MethodGet, "", false, nil, refusedErr, backend.Refused, backend.MaxRefused},
		{"refused on a reused connection", nil, http.MethodPost, "q", true, nil, &backend.AttemptError{Err: refusedErr, Reused: true}, backend.Refused, backend.MaxRefused},

		{"stale GET", nil, http.MethodGet, "", false, nil, &backend.AttemptError{Err: reset, Reused: true}, backend.Stale, backend.MaxStale},
		{"stale HEAD", nil, http.MethodHead, "", false, nil, &backend.AttemptError{Err: reset, Reused: true}, backend.Stale, backend.MaxStale},
		{"stale POST with Idempotency-Key", nil, http.MethodPost, "q", true, key, &backend.AttemptError{Err: reset, Reused: true}, backend.Stale, backend.MaxStale},
		{"stale POST with X-Idempotency-Key", nil, http.MethodPost, "q", true, http.Header{"X-Idempotency-Key": {"k-1"}}, &backend.AttemptError{Err: reset, Reused: true}, backend.Stale, backend.MaxStale},
		{"stale POST with Idempotency-Key, wrapped", nil, http.MethodPost, "q", true, key, fmt.Errorf("attempt: %w", &backend.AttemptError{Err: reset, Reused: true}), backend.Stale, backend.MaxStale},
		{"stale POST with Idempotency-Key without GetBody", nil, http.MethodPost, "q", false, key, &backend.AttemptError{Err: reset, Reused: true}, backend.NoResend, 0},
		{"stale POST without Idempotency-Key", nil, http.MethodPost, "q", true, nil, &backend.AttemptError{Err: reset, Reused: true}, backend.NoResend, 0},
		{"stale PUT without Idempotency-Key", nil, http.MethodPut, "q", true, nil, &backend.AttemptError{Err: reset, Reused: true}, backend.NoResend, 0},

		{"new connection failed, GET", nil, http.MethodGet, "", false, nil, &backend.AttemptError{Err: reset, Reused: false}, backend.NoResend, 0},
		{"new connection failed, POST with Idempotency-Key", nil, http.MethodPost, "q", true, key, &backend.AttemptError{Err: reset, Reused: false}, backend.NoResend, 0},
		{"plain error, GET", nil, http.MethodGet, "", false, nil, reset, backend.NoResend, 0},
		// A dial refused by the server's host is no refused HTTP/2 stream:
		// only the code REFUSED_STREAM is.
		{"connection refused, POST with GetBody", nil, http.MethodPost, "q", true, nil, errors.New("dial tcp 127.0.0.1:4001: connect: connection refused"), backend.NoResend, 0},
		{"connection refused on a reused connection, POST", nil, http.MethodPost, "q", true, nil, &backend.AttemptError{Err: errors.New("read tcp: connection refused"), Reused: true}, backend.NoResend, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			req := newRequest(t, ctx, tc.method, tc.body, tc.replayable, tc.header)
			var tries backend.Tries
			for i := 1; i <= tc.times; i++ {
				if got := backend.Resend(req, tc.err, &tries); got != tc.want {
					t.Fatalf("attempt %d: Resend = %v, want %v", i, got, tc.want)
				}
			}
			if got := backend.Resend(req, tc.err, &tries); got != backend.NoResend {
				t.Errorf("after %d resends: Resend = %v, want NoResend (%v)", tc.times, got, backend.NoResend)
			}
		})
	}
}

// TestResendBoundsPerReason: each reason has its own bound in one Tries;
// using up one leaves the others.
func TestResendBoundsPerReason(t *testing.T) {
	req := newRequest(t, context.Background(), http.MethodGet, "", false, nil)
	stale := &backend.AttemptError{Err: errors.New("EOF"), Reused: true}
	unsent := &backend.AttemptError{Err: errors.New("dial: connection refused"), Unsent: true}
	var tries backend.Tries
	for i, step := range []struct {
		err  error
		want backend.Reason
	}{
		{stale, backend.Stale},
		{stale, backend.NoResend},
		{refusedErr, backend.Refused},
		{backend.ErrDrained, backend.Moved},
		{refusedErr, backend.Refused},
		{refusedErr, backend.Refused},
		{refusedErr, backend.NoResend},
		{backend.ErrDrained, backend.Moved},
		{unsent, backend.Unsent},
		{unsent, backend.Unsent},
		{unsent, backend.Unsent},
		{unsent, backend.NoResend},
		{refusedErr, backend.NoResend},
	} {
		if got := backend.Resend(req, step.err, &tries); got != step.want {
			t.Errorf("step %d (%v): Resend = %v, want %v", i, step.err, got, step.want)
		}
	}
}

// TestCause: Cause takes off exactly one AttemptError, and only when it is
// the error itself.
func TestCause(t *testing.T) {
	inner := errors.New("connection reset")
	one := &backend.AttemptError{Err: inner, Reused: true}
	two := &backend.AttemptError{Err: one}
	wrapped := fmt.Errorf("schema x: %w", one)
	for _, tc := range []struct {
		name    string
		in, out error
	}{
		{"nil", nil, nil},
		{"plain", inner, inner},
		{"attempt error", one, inner},
		{"not reused", &backend.AttemptError{Err: inner}, inner},
		{"two attempt errors", two, one},
		{"wrapped attempt error", wrapped, wrapped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := backend.Cause(tc.in); got != tc.out {
				t.Errorf("Cause(%#v) = %#v, want %#v", tc.in, got, tc.out)
			}
		})
	}
}

// TestRewind: a request with a body is rewound through GetBody into a new
// request; the original request, its body included, is left as it was.
func TestRewind(t *testing.T) {
	t.Run("GetBody", func(t *testing.T) {
		req := newRequest(t, context.Background(), http.MethodPost, "0123456789", true, http.Header{"X-A": {"1"}})
		body := req.Body
		if _, err := io.ReadFull(req.Body, make([]byte, 4)); err != nil { // the first attempt read some
			t.Fatal(err)
		}
		r2, err := backend.Rewind(req)
		if err != nil {
			t.Fatalf("Rewind: %v", err)
		}
		if r2 == req {
			t.Fatal("Rewind returned the original request")
		}
		if req.Body != body {
			t.Error("Rewind replaced the original request's body")
		}
		got, err := io.ReadAll(r2.Body)
		if err != nil || string(got) != "0123456789" {
			t.Errorf("rewound body = %q, %v; want the whole body", got, err)
		}
		if rest, _ := io.ReadAll(req.Body); string(rest) != "456789" {
			t.Errorf("original body after Rewind = %q, want the unread rest %q", rest, "456789")
		}
		if r2.Method != req.Method || r2.URL != req.URL || r2.Header.Get("X-A") != "1" || r2.Context() != req.Context() || r2.GetBody == nil {
			t.Errorf("rewound request differs beyond its body: %+v", r2)
		}
	})
	for _, tc := range []struct {
		name string
		body io.ReadCloser
	}{
		{"nil body", nil},
		{"NoBody", http.NoBody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := newRequest(t, context.Background(), http.MethodGet, "", false, nil)
			req.Body = tc.body
			r2, err := backend.Rewind(req)
			if err != nil || r2 != req {
				t.Errorf("Rewind = %p, %v; want the request itself (%p), nil", r2, err, req)
			}
		})
	}
	t.Run("no GetBody", func(t *testing.T) {
		req := newRequest(t, context.Background(), http.MethodPost, "q", false, nil)
		if r2, err := backend.Rewind(req); err == nil || r2 != nil {
			t.Errorf("Rewind = %v, %v; want nil and an error", r2, err)
		}
	})
	t.Run("GetBody fails", func(t *testing.T) {
		req := newRequest(t, context.Background(), http.MethodPost, "q", true, nil)
		boom := errors.New("body gone")
		req.GetBody = func() (io.ReadCloser, error) { return nil, boom }
		if r2, err := backend.Rewind(req); !errors.Is(err, boom) || r2 != nil {
			t.Errorf("Rewind = %v, %v; want nil and %v", r2, err, boom)
		}
	})
}
