package middleware_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/middleware"
)

// fastRetry is a retry configuration whose waits are short.
func fastRetry(attempts int) middleware.RetryConfig {
	return middleware.RetryConfig{MaxAttempts: attempts, WaitMin: time.Millisecond, WaitMax: 5 * time.Millisecond}
}

// step is one answer of a scripted server: a status and headers.
type step struct {
	status int
	header map[string]string
}

func TestRetryAttempts(t *testing.T) {
	longAgo := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Format(http.TimeFormat)
	tests := []struct {
		name         string
		body         string
		cfg          middleware.RetryConfig
		steps        []step // the last one repeats
		wantAttempts int
		wantStatus   int
	}{
		{"query 503 then 200", queryBody, fastRetry(3), []step{{status: 503}, {status: 200}}, 2, 200},
		{"query 502, 504 then 200", queryBody, fastRetry(3), []step{{status: 502}, {status: 504}, {status: 200}}, 3, 200},
		{"query 200 at once", queryBody, fastRetry(3), []step{{status: 200}}, 1, 200},
		{"batch of queries", `[` + queryBody + `,{"query":"{ a }"}]`, fastRetry(3), []step{{status: 503}, {status: 200}}, 2, 200},
		{"mutation never retried", mutationBody, fastRetry(3), []step{{status: 503}, {status: 200}}, 1, 503},
		{"subscription never retried", subscriptionBody, fastRetry(3), []step{{status: 503}, {status: 200}}, 1, 503},
		{"persisted query never retried", persistedBody, fastRetry(3), []step{{status: 503}, {status: 200}}, 1, 503},
		{"batch with a mutation never retried", `[` + queryBody + `,` + mutationBody + `]`, fastRetry(3), []step{{status: 503}, {status: 200}}, 1, 503},
		{"case variant of query with a mutation never retried", caseVariantBody, fastRetry(3), []step{{status: 503}, {status: 200}}, 1, 503},
		{"batch with a case variant entry never retried", `[` + queryBody + `,` + caseVariantBody + `]`, fastRetry(3), []step{{status: 503}, {status: 200}}, 1, 503},
		{"Retry-After seconds", queryBody, fastRetry(3), []step{{status: 429, header: map[string]string{"Retry-After": "0"}}, {status: 200}}, 2, 200},
		{"Retry-After HTTP-date", queryBody, fastRetry(3), []step{{status: 503, header: map[string]string{"Retry-After": longAgo}}, {status: 200}}, 2, 200},
		{"Retry-After capped at WaitMax", queryBody, fastRetry(3), []step{{status: 429, header: map[string]string{"Retry-After": "3600"}}, {status: 200}}, 2, 200},
		{"gives up with the last response", queryBody, fastRetry(3), []step{{status: 503}}, 3, 503},
		{"500 not retried by default", queryBody, fastRetry(3), []step{{status: 500}, {status: 200}}, 1, 500},
		{"own statuses", queryBody, middleware.RetryConfig{MaxAttempts: 2, WaitMin: time.Millisecond, WaitMax: time.Millisecond, Statuses: []int{500}}, []step{{status: 500}, {status: 200}}, 2, 200},
		{"own statuses replace the defaults", queryBody, middleware.RetryConfig{MaxAttempts: 2, WaitMin: time.Millisecond, WaitMax: time.Millisecond, Statuses: []int{500}}, []step{{status: 503}, {status: 200}}, 1, 503},
		{"off by default", queryBody, middleware.RetryConfig{}, []step{{status: 503}, {status: 200}}, 1, 503},
		{"one attempt", queryBody, middleware.RetryConfig{MaxAttempts: 1}, []step{{status: 503}, {status: 200}}, 1, 503},
	}
	for _, rewindable := range []bool{true, false} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/GetBody=%t", tt.name, rewindable), func(t *testing.T) {
				srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ string) {
					s := tt.steps[min(n, len(tt.steps))-1]
					for k, v := range s.header {
						w.Header().Set(k, v)
					}
					w.WriteHeader(s.status)
					fmt.Fprintf(w, "attempt %d", n)
				})
				rt := middleware.Chain(srv.transport(), middleware.Retry(tt.cfg))
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				defer cancel()
				req := newRequest(t, ctx, srv.URL, tt.body, rewindable)
				header := req.Header.Clone()

				resp, err := rt.RoundTrip(req)
				if err != nil {
					t.Fatalf("RoundTrip: %v", err)
				}
				body := readBody(t, resp)
				if resp.StatusCode != tt.wantStatus {
					t.Errorf("status %d, want %d", resp.StatusCode, tt.wantStatus)
				}
				got := srv.received()
				if len(got) != tt.wantAttempts {
					t.Fatalf("server saw %d attempts, want %d", len(got), tt.wantAttempts)
				}
				if want := fmt.Sprintf("attempt %d", tt.wantAttempts); body != want {
					t.Errorf("body %q, want the last attempt's %q", body, want)
				}
				for i, r := range got {
					if r.Body != tt.body {
						t.Errorf("attempt %d sent body %q, want %q", i+1, r.Body, tt.body)
					}
				}
				if diff := cmp.Diff(header, req.Header); diff != "" {
					t.Errorf("caller's request header changed (-before +after):\n%s", diff)
				}
			})
		}
	}
}

func TestRetryTransportErrors(t *testing.T) {
	errReset := errors.New("connection reset by peer")
	tests := []struct {
		name         string
		errs         []error // per attempt; nil: 200
		wantAttempts int
		wantErr      error // nil: success
		wantMsg      string
	}{
		{"recovers", []error{errReset, errReset, nil}, 3, nil, ""},
		{"gives up", []error{errReset, errReset, errReset, nil}, 3, errReset, "POST http://products.internal/graphql giving up after 3 attempt(s): connection reset by peer"},
		{"cancellation not retried", []error{context.Canceled, nil}, 1, context.Canceled, "giving up after 1 attempt(s)"},
		{"deadline not retried", []error{fmt.Errorf("dial: %w", context.DeadlineExceeded), nil}, 1, context.DeadlineExceeded, "giving up after 1 attempt(s)"},
		{"untrusted certificate not retried", []error{&tls.CertificateVerificationError{Err: errors.New("x509: certificate signed by unknown authority")}, nil}, 1, nil, "giving up after 1 attempt(s)"},
		{"bad scheme not retried", []error{errors.New(`unsupported protocol scheme "ftp"`), nil}, 1, nil, "giving up after 1 attempt(s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			attempts := 0
			next := roundTripFunc(func(req *http.Request) (*http.Response, error) {
				attempts++
				io.Copy(io.Discard, req.Body)
				req.Body.Close()
				if err := tt.errs[attempts-1]; err != nil {
					return nil, err
				}
				resp, _ := fakeResponse(req, 200, "ok")
				return resp, nil
			})
			rt := middleware.Chain(next, middleware.Retry(fastRetry(3)))
			resp, err := rt.RoundTrip(newRequest(t, t.Context(), "http://user:secret@products.internal/graphql?token=secret", queryBody, true))
			if attempts != tt.wantAttempts {
				t.Errorf("%d attempts, want %d", attempts, tt.wantAttempts)
			}
			if tt.wantMsg == "" {
				if err != nil {
					t.Fatalf("RoundTrip: %v", err)
				}
				readBody(t, resp)
				return
			}
			if err == nil {
				t.Fatal("RoundTrip succeeded, want an error")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v does not wrap %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not contain %q", err, tt.wantMsg)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q leaks the URL's password or query", err)
			}
		})
	}
}

func TestRetryClosesDiscardedBodies(t *testing.T) {
	var bodies []*trackedBody
	next := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, b := fakeResponse(req, 503, "busy")
		bodies = append(bodies, b)
		return resp, nil
	})
	resp, err := middleware.Chain(next, middleware.Retry(fastRetry(3))).RoundTrip(newRequest(t, t.Context(), "http://products.internal/graphql", queryBody, true))
	if err != nil {
		t.Fatal(err)
	}
	if len(bodies) != 3 {
		t.Fatalf("%d attempts, want 3", len(bodies))
	}
	for i, b := range bodies[:2] {
		if !b.closed.Load() {
			t.Errorf("body of discarded attempt %d not closed", i+1)
		}
	}
	if bodies[2].closed.Load() {
		t.Error("body of the returned response closed")
	}
	if got := readBody(t, resp); got != "busy" {
		t.Errorf("body %q, want busy", got)
	}
}

// TestRetryContextEndsWait cancels the request while the retry waits: the
// wait ends at once, nothing more is sent, and the error says why.
func TestRetryContextEndsWait(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	attempts := 0
	var body *trackedBody
	next := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		attempts++
		var resp *http.Response
		resp, body = fakeResponse(req, 503, "busy")
		return resp, nil
	})
	cfg := middleware.RetryConfig{
		MaxAttempts: 3,
		WaitMin:     time.Hour,
		WaitMax:     time.Hour,
		Backoff: func(min, max time.Duration, n int, resp *http.Response) time.Duration {
			cancel() // the caller leaves as the wait begins
			return max
		},
	}
	_, err := middleware.Chain(next, middleware.Retry(cfg)).RoundTrip(newRequest(t, ctx, "http://products.internal/graphql", queryBody, true))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if !strings.Contains(err.Error(), "giving up after 1 attempt(s)") {
		t.Errorf("error %q does not count the attempts", err)
	}
	if attempts != 1 {
		t.Errorf("%d attempts, want 1", attempts)
	}
	if !body.closed.Load() {
		t.Error("body of the discarded response not closed")
	}
}

// TestRetryLargeBody checks that a body over the classification limit is
// sent whole, once, even without GetBody.
func TestRetryLargeBody(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ string) { w.WriteHeader(503) })
	big := `{"query":"{ a }","variables":{"pad":"` + strings.Repeat("x", 1<<20) + `"}}`
	for _, rewindable := range []bool{true, false} {
		t.Run("GetBody="+strconv.FormatBool(rewindable), func(t *testing.T) {
			before := len(srv.received())
			resp, err := middleware.Chain(srv.transport(), middleware.Retry(fastRetry(3))).RoundTrip(newRequest(t, t.Context(), srv.URL, big, rewindable))
			if err != nil {
				t.Fatal(err)
			}
			readBody(t, resp)
			got := srv.received()[before:]
			if len(got) != 1 {
				t.Fatalf("server saw %d attempts, want 1", len(got))
			}
			if got[0].Body != big {
				t.Errorf("server got %d bytes, want %d", len(got[0].Body), len(big))
			}
		})
	}
}

// TestRetryRefusedUnsentRefunds: a retry that the breaker or rate limit
// further in refuses unsent gives its budget back. The budget has room
// for one retry (ratio 0.5 over one primed first try and each query's
// own): the first query's retry is refused, so the second query's retry
// still finds the budget and reaches the source schema.
func TestRetryRefusedUnsentRefunds(t *testing.T) {
	budget := middleware.NewRetryBudget(middleware.RetryBudgetConfig{Ratio: 0.5, MinPerSecond: -1})
	budget.First()
	calls := map[string]int{}
	rt := middleware.Retry(middleware.RetryConfig{MaxAttempts: 2, WaitMin: time.Millisecond, WaitMax: time.Millisecond, Budget: budget})(roundTripFunc(func(req *http.Request) (*http.Response, error) {
		id := req.Header.Get("X-Id")
		calls[id]++
		if calls[id] == 2 && id == "q1" {
			return nil, fmt.Errorf("%w: not sent", fault.ErrCircuitOpen)
		}
		status := http.StatusServiceUnavailable
		if calls[id] == 2 {
			status = http.StatusOK
		}
		resp, _ := fakeResponse(req, status, "{}")
		return resp, nil
	}))
	for _, id := range []string{"q1", "q2"} {
		req := newRequest(t, context.Background(), "http://products.test/graphql", queryBody, true)
		req.Header.Set("X-Id", id)
		resp, err := rt.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		if id == "q2" && (err != nil || resp.StatusCode != http.StatusOK) {
			t.Errorf("q2: %v; want its retry's 200 (the refused retry's budget given back)", err)
		}
	}
	if calls["q2"] != 2 {
		t.Errorf("q2 made %d tries, want 2", calls["q2"])
	}
}

// TestRetryLog: each retry is one Debug record naming the attempt, the
// wait and the status or error, with the URL stripped of its password,
// query and fragment (a GET carries its variables in the query).
func TestRetryLog(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	calls := 0
	next := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		calls++
		if calls == 1 {
			return nil, errors.New("connection reset by peer")
		}
		status := http.StatusOK
		if calls == 2 {
			status = http.StatusServiceUnavailable
		}
		resp, _ := fakeResponse(req, status, "{}")
		return resp, nil
	})
	cfg := fastRetry(3)
	cfg.Logger = log
	resp, err := middleware.Retry(cfg)(next).RoundTrip(newRequest(t, t.Context(), "http://user:secret@products.internal/graphql?variables=secret#secret", queryBody, true))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d log records, want 2 (one per retry):\n%s", len(lines), buf.String())
	}
	for i, want := range [][]string{
		{"level=DEBUG", `msg="retrying source schema request"`, "method=POST", "url=http://products.internal/graphql", "attempt=1", "wait=", `error="connection reset by peer"`},
		{"level=DEBUG", "attempt=2", "status=503"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("record %d %q lacks %q", i+1, lines[i], w)
			}
		}
		if strings.Contains(lines[i], "secret") {
			t.Errorf("record %d %q leaks the URL's password, query or fragment", i+1, lines[i])
		}
	}
}
