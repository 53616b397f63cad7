package faults_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fusiongo/transport/internal/testsupport/faults"
)

// start runs a fault server for the test.
func start(t *testing.T, opts faults.Options) *faults.Server {
	t.Helper()
	srv, err := faults.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// client is a plain net/http client with its own transport, closed when
// the test ends.
func client(t *testing.T, tweak func(*http.Transport)) *http.Client {
	t.Helper()
	tr := &http.Transport{DisableCompression: true}
	if tweak != nil {
		tweak(tr)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// get sends a GET with a bound, so that a fault the test gets wrong fails
// it rather than hanging it.
func get(t *testing.T, c *http.Client, url string, d time.Duration) (*http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.Do(req)
}

// TestFaultsOnTheWire checks, with a bare net/http client, that each fault
// puts on the wire what its doc says.
func TestFaultsOnTheWire(t *testing.T) {
	tests := []struct {
		fault faults.Fault
		// status is the response wanted; 0: the request itself fails.
		status int
		// body is the prefix of the body read before readErr; readErr nil:
		// the body reads to its end.
		body    string
		readErr error
		// reqErr is what the failed request's error matches.
		reqErr error
		// text is part of the error's text.
		text string
	}{
		{fault: faults.None, status: 200, body: `{"data":{"ok":true}}`},
		{fault: faults.Refused, reqErr: syscall.ECONNREFUSED},
		{fault: faults.ResetBeforeHeaders, reqErr: syscall.ECONNRESET},
		{fault: faults.ResetMidBody, status: 200, body: strings.Repeat("r", 100), readErr: syscall.ECONNRESET},
		{fault: faults.NoHeaders, reqErr: context.DeadlineExceeded},
		{fault: faults.BodyStall, status: 200, body: strings.Repeat("s", 16), readErr: context.DeadlineExceeded},
		{fault: faults.WrongContentLength, status: 200, body: `{"data":{}`, readErr: io.ErrUnexpectedEOF},
		{fault: faults.TruncatedChunked, status: 200, body: `{"data":{}}{"more":`, readErr: io.ErrUnexpectedEOF},
		{fault: faults.ServerError, status: 503, body: `{"errors":[{"message":"faults: server error"}]}`},
		{fault: faults.TooManyRequests, status: 429, body: `{"errors":[{"message":"faults: too many requests"}]}`},
		{fault: faults.RedirectLoop, text: "stopped after 10 redirects"},
		{fault: faults.OversizedHeaders, text: "server response headers exceeded 10485760 bytes"},
		{fault: faults.TLSHandshake, text: "certificate signed by unknown authority"},
	}
	for _, tt := range tests {
		t.Run(string(tt.fault), func(t *testing.T) {
			srv := start(t, faults.Options{})
			c := client(t, nil)
			// The deadline ends the two faults that wait for the client;
			// for the others it only guards against a hang, and leaves
			// room for 11 MiB of headers parsed under -race on a loaded
			// machine.
			d := time.Minute
			if tt.fault == faults.NoHeaders || tt.fault == faults.BodyStall {
				d = 300 * time.Millisecond
			}
			resp, err := get(t, c, srv.URL(tt.fault), d)
			if tt.status == 0 {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("got %s, want an error", resp.Status)
				}
				if tt.reqErr != nil && !errors.Is(err, tt.reqErr) {
					t.Errorf("error %v does not match %v", err, tt.reqErr)
				}
				if !strings.Contains(err.Error(), tt.text) {
					t.Errorf("error %q does not contain %q", err, tt.text)
				}
				return
			}
			if err != nil {
				t.Fatalf("request failed: %v", err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.status)
			}
			got, err := io.ReadAll(resp.Body)
			if !strings.HasPrefix(string(got), tt.body) || (tt.readErr == nil && string(got) != tt.body) {
				t.Errorf("body %q, want %q", got, tt.body)
			}
			if tt.readErr == nil && err != nil || tt.readErr != nil && !errors.Is(err, tt.readErr) {
				t.Errorf("reading the body: %v, want %v", err, tt.readErr)
			}
		})
	}
}

// TestTooManyRequestsRetryAfter: Retry-After is given in whole seconds,
// rounded up.
func TestTooManyRequestsRetryAfter(t *testing.T) {
	for _, tt := range []struct {
		opt  time.Duration
		want string
	}{{0, "1"}, {1500 * time.Millisecond, "2"}, {30 * time.Second, "30"}} {
		srv := start(t, faults.Options{RetryAfter: tt.opt})
		resp, err := get(t, client(t, nil), srv.URL(faults.TooManyRequests), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Retry-After"); got != tt.want {
			t.Errorf("RetryAfter %v: Retry-After %q, want %q", tt.opt, got, tt.want)
		}
	}
}

// TestRedirectLoopCountsEveryHop: every request of the loop reaches the
// server. net/http's default policy refuses the 10th redirect before
// sending it, so the server sees the first request and 9 redirects.
func TestRedirectLoopCountsEveryHop(t *testing.T) {
	srv := start(t, faults.Options{})
	if _, err := get(t, client(t, nil), srv.URL(faults.RedirectLoop), time.Minute); err == nil {
		t.Fatal("the loop ended")
	}
	if n := srv.Seen(faults.RedirectLoop); n != 10 {
		t.Errorf("server saw %d requests, want 10", n)
	}
}

// TestOversizedHeadersBelowTheLimit: a client whose limit is above
// HeaderBytes gets the whole header block and an empty 200.
func TestOversizedHeadersBelowTheLimit(t *testing.T) {
	srv := start(t, faults.Options{HeaderBytes: 64 << 10})
	small := client(t, func(tr *http.Transport) { tr.MaxResponseHeaderBytes = 32 << 10 })
	if _, err := get(t, small, srv.URL(faults.OversizedHeaders), time.Minute); err == nil || !strings.Contains(err.Error(), "exceeded 32768 bytes") {
		t.Errorf("limit 32 KiB: error %v, want the limit exceeded", err)
	}
	big := client(t, func(tr *http.Transport) { tr.MaxResponseHeaderBytes = 1 << 20 })
	resp, err := get(t, big, srv.URL(faults.OversizedHeaders), time.Minute)
	if err != nil {
		t.Fatalf("limit 1 MiB: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || len(resp.Header) < 60 {
		t.Errorf("status %d with %d headers, want 200 with 64 KiB of them", resp.StatusCode, len(resp.Header))
	}
}

// TestEndlessBodyStopsAtItsCap: a client that reads forever still ends,
// with an unexpected EOF once the cap is sent.
func TestEndlessBodyStopsAtItsCap(t *testing.T) {
	const limit = 256 << 10
	srv := start(t, faults.Options{EndlessCap: limit})
	resp, err := get(t, client(t, nil), srv.URL(faults.EndlessBody), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if n < limit || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("read %d bytes, error %v; want at least %d and an unexpected EOF", n, err, limit)
	}
}

// TestEndlessBodyEndsWhenTheClientGoes: closing the body early ends the
// server's stream; Close then has nothing left to wait for.
func TestEndlessBodyEndsWhenTheClientGoes(t *testing.T) {
	srv := start(t, faults.Options{})
	resp, err := get(t, client(t, nil), srv.URL(faults.EndlessBody), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if n != 1<<20 || err != nil {
		t.Errorf("read %d bytes, error %v; want 1 MiB", n, err)
	}
	if err := srv.Close(); err != nil {
		t.Error(err)
	}
}

// TestTLSHandshakeSkippingVerification: a client that trusts anything gets
// past the handshake and reaches the plain faults.
func TestTLSHandshakeSkippingVerification(t *testing.T) {
	srv := start(t, faults.Options{})
	strict := client(t, nil)
	_, err := get(t, strict, srv.URL(faults.TLSHandshake), time.Minute)
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Errorf("error %v, want x509.UnknownAuthorityError", err)
	}
	lax := client(t, func(tr *http.Transport) { tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} })
	url := strings.Replace(srv.URL(faults.TLSHandshake), faults.TLSHandshake.Path(), faults.ServerError.Path(), 1)
	resp, err := get(t, lax, url, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || srv.Seen(faults.TLSHandshake) != 2 {
		t.Errorf("status %d after %d handshakes, want 503 after 2", resp.StatusCode, srv.Seen(faults.TLSHandshake))
	}
}

// TestCloseEndsWaitingFaults: Close ends the faults that wait for the
// client, and returns only once their goroutines are gone (TestMain checks
// that none is left).
func TestCloseEndsWaitingFaults(t *testing.T) {
	srv, err := faults.Start(faults.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := client(t, nil)
	errs := make(chan error, 2)
	for _, f := range []faults.Fault{faults.NoHeaders, faults.BodyStall} {
		go func() {
			resp, err := get(t, c, srv.URL(f), time.Minute)
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			errs <- err
		}()
	}
	// Wait until both requests are in, so that Close has something to end.
	for deadline := time.Now().Add(30 * time.Second); srv.Seen(faults.NoHeaders) == 0 || srv.Seen(faults.BodyStall) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the requests did not arrive")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := srv.Close(); err != nil {
		t.Error(err)
	}
	for range 2 {
		if err := <-errs; err == nil || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("client error %v, want the connection closed by Close", err)
		}
	}
	if err := srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestUnknownFault answers 404.
func TestUnknownFault(t *testing.T) {
	srv := start(t, faults.Options{})
	url := strings.Replace(srv.URL(faults.None), "none", "no-such-fault", 1)
	resp, err := get(t, client(t, nil), url, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("status %d, want 404", resp.StatusCode)
	}
}
