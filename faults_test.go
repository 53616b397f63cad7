package transport_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/testsupport/faults"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// The bounds the fault cases run with. Every case configures a connect
// timeout and a header timeout, so that each call has a bound to finish
// within; the cases about a body that does not end use the caller's
// deadline instead, which is the only bound on a body.
const (
	faultConnect  = time.Second
	faultHeaders  = 5 * time.Second
	shortHeaders  = 200 * time.Millisecond // "headers that never come"
	bodyDeadline  = 300 * time.Millisecond // "a body that stalls"
	endlessCap    = 1 << 20                // how much of the endless body the caller reads
	faultRounds   = 3                      // fault requests per case, each followed by a control request
	boundSlack    = 2 * time.Second        // scheduling under -race on 2 shared cores
	controlBudget = 5 * time.Second        // a control request that hangs fails the test instead
)

// faultWant is what a caller of one path gets from one fault.
type faultWant struct {
	// status is the response's status; 0 means Post fails.
	status int
	// readErr: the response arrives and reading its body fails.
	readErr bool
	// is lists what the error matches with errors.Is.
	is []error
	// text is the stable part of the error's text.
	text string
	// seen is how many requests the source schema receives per call.
	seen int
}

// faultCase is one fault and its configuration.
type faultCase struct {
	fault         faults.Fault
	headerTimeout time.Duration // header_timeout; 0: faultHeaders
	deadline      time.Duration // caller's context deadline; 0: none
	readCap       int64         // >0: the caller reads this much of the body, then closes it
	rounds        int           // fault requests; 0: faultRounds
	control       bool          // a control request to the same schema follows each call
	want          func(env.Path) faultWant
}

func same(w faultWant) func(env.Path) faultWant { return func(env.Path) faultWant { return w } }

var faultCases = []faultCase{
	{fault: faults.Refused, want: same(faultWant{is: []error{syscall.ECONNREFUSED}, text: "connect: connection refused"})},
	{fault: faults.ResetBeforeHeaders, control: true, want: same(faultWant{is: []error{syscall.ECONNRESET}, text: "connection reset by peer", seen: 1})},
	{fault: faults.ResetMidBody, control: true, want: same(faultWant{status: 200, readErr: true, is: []error{syscall.ECONNRESET}, text: "connection reset by peer", seen: 1})},
	{fault: faults.NoHeaders, control: true, headerTimeout: shortHeaders, want: same(faultWant{is: []error{context.DeadlineExceeded}, text: "no response headers within 200ms (header_timeout)", seen: 1})},
	{fault: faults.BodyStall, control: true, deadline: bodyDeadline, want: same(faultWant{status: 200, readErr: true, is: []error{context.DeadlineExceeded}, text: "context deadline exceeded", seen: 1})},
	{fault: faults.WrongContentLength, control: true, want: same(faultWant{status: 200, readErr: true, is: []error{io.ErrUnexpectedEOF}, text: "unexpected EOF", seen: 1})},
	{fault: faults.TruncatedChunked, control: true, want: same(faultWant{status: 200, readErr: true, is: []error{io.ErrUnexpectedEOF}, text: "unexpected EOF", seen: 1})},
	{fault: faults.ServerError, control: true, want: same(faultWant{status: 503, seen: 1})},
	{fault: faults.TooManyRequests, control: true, want: same(faultWant{status: 429, seen: 1})},
	{fault: faults.RedirectLoop, control: true, want: func(p env.Path) faultWant {
		if p == env.PathLegacy {
			// http.Client refuses the 10th redirect before sending it.
			return faultWant{text: "stopped after 10 redirects", seen: 10}
		}
		return faultWant{status: 307, seen: 1}
	}},
	// 11 MiB of headers take 0.2 to 1 s to parse under -race, and several
	// on a loaded machine: the bound leaves room, and one round keeps the
	// run short.
	{fault: faults.OversizedHeaders, control: true, headerTimeout: 30 * time.Second, rounds: 1, want: same(faultWant{text: "server response headers exceeded 65536 bytes; aborted", seen: 1})},
	{fault: faults.EndlessBody, control: true, deadline: 10 * time.Second, readCap: endlessCap, want: same(faultWant{status: 200, seen: 1})},
	{fault: faults.TLSHandshake, want: same(faultWant{text: "x509: certificate signed by unknown authority", seen: 1})},
}

// faultRow is what one case saw, for the summary and docs/reliability.md.
type faultRow struct {
	name             string
	got              string // the outcome, in a few words
	sent, failed     int
	seen             int // requests the source schema received (handshakes for tls)
	fdBefore, fdAft  int
	goBefore, goAft  int
	slowest, allowed time.Duration
}

// TestFaults runs every fault of internal/testsupport/faults against both paths and
// checks that the caller gets an error or a response within the configured
// bound, that the error names the source schema and wraps its cause, that
// the schema still answers afterwards, and that no goroutine or descriptor
// is left once the invoker and the server are closed.
func TestFaults(t *testing.T) {
	warmUp(t)
	var rows []faultRow
	for _, fc := range faultCases {
		for _, path := range paths {
			t.Run(string(fc.fault)+"/"+string(path), func(t *testing.T) {
				row := runFaultCase(t, fc, path)
				rows = append(rows, row)
			})
		}
	}
	logFaultRows(t, rows)
}

// logFaultRows logs rows as the Markdown table of docs/reliability.md.
func logFaultRows(t *testing.T, rows []faultRow) {
	var b strings.Builder
	b.WriteString("\n| case | caller got | sent | failed | schema saw | fds before / after | goroutines before / after | slowest call / bound |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d / %d | %d / %d | %v / %v |\n", r.name, r.got, r.sent, r.failed, r.seen, r.fdBefore, r.fdAft, r.goBefore, r.goAft, r.slowest.Round(time.Millisecond), r.allowed)
	}
	t.Log(b.String())
}

func runFaultCase(t *testing.T, fc faultCase, path env.Path) faultRow {
	// The previous case's goroutines, and its test goroutine, may still
	// be on their way out: start from a clean count.
	goleak.VerifyNone(t)
	row := faultRow{name: t.Name()[len("TestFaults/"):], fdBefore: wiretest.OpenFDs(), goBefore: runtime.NumGoroutine()}
	want := fc.want(path)
	rounds := fc.rounds
	if rounds == 0 {
		rounds = faultRounds
	}

	srv, err := faults.Start(faults.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	cfg := config(path, "products", srv.URL(fc.fault))
	cfg.Defaults.ConnectTimeout = faultConnect
	cfg.Defaults.HeaderTimeout = faultHeaders
	if fc.headerTimeout != 0 {
		cfg.Defaults.HeaderTimeout = fc.headerTimeout
	}
	inv := newInvoker(t, cfg)

	// The bound each call must end within: the caller's deadline if it
	// has one, else the header timeout (which covers dialing too, as the
	// connect timeout is shorter).
	row.allowed = cfg.Defaults.HeaderTimeout
	if fc.deadline != 0 {
		row.allowed = fc.deadline
	}
	var bodyErrs []error
	for range rounds {
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if fc.deadline != 0 {
			ctx, cancel = context.WithTimeout(ctx, fc.deadline)
		}
		started := time.Now()
		row.sent++
		resp, err := inv.Post(ctx, "products", []byte(`{"query":"{ ok }"}`))
		var readErr error
		var n int64
		if err == nil {
			if fc.readCap > 0 {
				n, readErr = io.Copy(io.Discard, io.LimitReader(resp.Body, fc.readCap))
			} else {
				n, readErr = io.Copy(io.Discard, resp.Body)
			}
			resp.Body.Close()
		}
		elapsed := time.Since(started)
		cancel()
		row.slowest = max(row.slowest, elapsed)
		if elapsed > row.allowed+boundSlack {
			t.Errorf("call took %v, bound %v", elapsed, row.allowed)
		}
		switch {
		case err != nil:
			row.failed++
			row.got = "error: " + shortErr(err)
			checkCallErr(t, err, want)
		case readErr != nil:
			row.failed++
			row.got = fmt.Sprintf("%d, then body error: %s", resp.StatusCode, shortErr(readErr))
			checkStatus(t, resp, want)
			bodyErrs = append(bodyErrs, readErr)
			checkCause(t, readErr, want)
			if !want.readErr {
				t.Errorf("reading the body: %v", readErr)
			}
		default:
			row.got = fmt.Sprintf("%d, %d body bytes", resp.StatusCode, n)
			checkStatus(t, resp, want)
			if want.readErr {
				t.Errorf("the body read to its end (%d bytes), want an error", n)
			}
			if fc.readCap > 0 && n != fc.readCap {
				t.Errorf("read %d bytes of the endless body, want %d", n, fc.readCap)
			}
		}
		if fc.control {
			row.sent++
			if !controlAnswers(t, inv, srv) {
				row.failed++
			}
		}
	}
	row.seen = srv.Seen(fc.fault)
	if row.seen != want.seen*rounds {
		t.Errorf("the source schema received %d requests, want %d", row.seen, want.seen*rounds)
	}
	if len(bodyErrs) > 0 {
		t.Run("body error names the source schema", func(t *testing.T) {
			checkBodyErrNamed(t, bodyErrs[0])
		})
	}

	inv.Close()
	srv.Close()
	goleak.VerifyNone(t)
	row.goAft = runtime.NumGoroutine()
	row.fdAft = wiretest.WaitFDs(row.fdBefore)
	if row.fdAft != row.fdBefore {
		t.Errorf("%d descriptors open after the case, %d before", row.fdAft, row.fdBefore)
	}
	return row
}

// checkCallErr checks an error from Post: it names the source schema, is
// a *url.Error, and wraps the cause.
func checkCallErr(t *testing.T, err error, want faultWant) {
	t.Helper()
	if want.status != 0 {
		t.Errorf("Post failed: %v; want status %d", err, want.status)
		return
	}
	if !strings.Contains(err.Error(), `source schema "products"`) {
		t.Errorf("error %q does not name the source schema", err)
	}
	var ue *url.Error
	if !errors.As(err, &ue) {
		t.Errorf("error %q is not a *url.Error", err)
	}
	checkCause(t, err, want)
}

func checkCause(t *testing.T, err error, want faultWant) {
	t.Helper()
	for _, target := range want.is {
		if !errors.Is(err, target) {
			t.Errorf("error %q does not match %v (chain: %s)", err, target, chain(err))
		}
	}
	if !strings.Contains(err.Error(), want.text) {
		t.Errorf("error %q does not contain %q", err, want.text)
	}
}

func checkStatus(t *testing.T, resp *http.Response, want faultWant) {
	t.Helper()
	if want.status == 0 {
		t.Errorf("Post returned %s, want an error", resp.Status)
		return
	}
	if resp.StatusCode != want.status {
		t.Errorf("status %d, want %d", resp.StatusCode, want.status)
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests:
		if got := resp.Header.Get("Retry-After"); got != "1" {
			t.Errorf("Retry-After %q did not reach the caller", got)
		}
	case http.StatusTemporaryRedirect:
		if got := resp.Header.Get("Location"); got != faults.RedirectLoop.Path() {
			t.Errorf("Location %q did not reach the caller", got)
		}
	}
}

// checkBodyErrNamed holds a body's read error to the same rule as a call's
// error: it names the source schema and is a *url.Error.
func checkBodyErrNamed(t *testing.T, err error) {
	var ue *url.Error
	if !strings.Contains(err.Error(), `source schema "products"`) || !errors.As(err, &ue) {
		t.Errorf("the body's read error %q names no source schema or is no *url.Error", err)
	}
}

// controlAnswers sends a request for the control path to the same source
// schema: after a fault, the schema's connections must still work.
func controlAnswers(t *testing.T, inv transport.Invoker, srv *faults.Server) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), controlBudget)
	defer cancel()
	req, err := http.NewRequest(http.MethodGet, srv.URL(faults.None), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := inv.Do(ctx, "products", req)
	if err != nil {
		t.Errorf("control request after the fault: %v", err)
		return false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 || string(body) != `{"data":{"ok":true}}` {
		t.Errorf("control request after the fault: %d %q, %v", resp.StatusCode, body, err)
		return false
	}
	return true
}

// TestFaultsTypedCauses checks the causes that only a type can say, on both
// paths: a header timeout is a *fault.HeaderTimeoutError and a net.Error
// with Timeout(); a TLS failure is a *tls.CertificateVerificationError
// around an x509.UnknownAuthorityError; a refused dial is a *net.OpError.
func TestFaultsTypedCauses(t *testing.T) {
	warmUp(t)
	srv, err := faults.Start(faults.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			cfg := config(path, "noheaders", srv.URL(faults.NoHeaders), "tls", srv.URL(faults.TLSHandshake), "refused", srv.URL(faults.Refused))
			cfg.Defaults.HeaderTimeout = faultHeaders
			noHeaders := cfg.SourceSchemas["noheaders"]
			noHeaders.HeaderTimeout = shortHeaders
			cfg.SourceSchemas["noheaders"] = noHeaders
			inv := newInvoker(t, cfg)

			_, err := inv.Post(context.Background(), "noheaders", nil)
			var hte *fault.HeaderTimeoutError
			var ne net.Error
			if !errors.As(err, &hte) || hte.Bound != shortHeaders || !errors.As(err, &ne) || !ne.Timeout() {
				t.Errorf("no headers: %v (chain: %s), want a *fault.HeaderTimeoutError of %v", err, chain(err), shortHeaders)
			}

			_, err = inv.Post(context.Background(), "tls", nil)
			var cve *tls.CertificateVerificationError
			var uae x509.UnknownAuthorityError
			if !errors.As(err, &cve) || !errors.As(err, &uae) || !strings.Contains(err.Error(), `source schema "tls"`) {
				t.Errorf("tls: %v (chain: %s), want a certificate verification error", err, chain(err))
			}

			_, err = inv.Post(context.Background(), "refused", nil)
			var oe *net.OpError
			if !errors.As(err, &oe) || oe.Op != "dial" || !strings.Contains(err.Error(), `source schema "refused"`) {
				t.Errorf("refused: %v (chain: %s), want a dial *net.OpError", err, chain(err))
			}
		})
	}
}

// warmUp opens what the process keeps for its whole life before any count
// or bound: the network poller's descriptors, and the system's root
// certificates, whose loading would otherwise land in the first TLS call
// and, on a loaded machine, take seconds of its bound.
func warmUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	x509.SystemCertPool()
}

// chain spells out err's wrapping, outermost first, by type.
func chain(err error) string {
	var parts []string
	for depth := 0; err != nil && depth < 16; depth++ {
		parts = append(parts, fmt.Sprintf("%T", err))
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			if errs := u.Unwrap(); len(errs) > 0 {
				err = errs[0]
			} else {
				err = nil
			}
		default:
			err = nil
		}
	}
	return strings.Join(parts, " > ")
}

// shortErr is err's text with the random parts, URLs and ports, replaced.
func shortErr(err error) string {
	s := quotedURL.ReplaceAllString(err.Error(), `"<url>"`)
	return loopbackPort.ReplaceAllString(s, "127.0.0.1:<port>")
}

var (
	quotedURL    = regexp.MustCompile(`"https?://[^"]*"`)
	loopbackPort = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)
)

// closeRecorder is a request body that records whether it was closed.
type closeRecorder struct {
	io.ReadCloser
	closed atomic.Bool
}

func (c *closeRecorder) Close() error {
	c.closed.Store(true)
	return c.ReadCloser.Close()
}

// TestFaultsCloseRequestBody: Do closes the request body the caller passed
// on every fault, as http.Client.Do does ("closed by the underlying
// Transport, even on errors"), and when it refuses the request because the
// invoker is closed. The body is the read end of a pipe, so a body left
// open is a descriptor left open.
func TestFaultsCloseRequestBody(t *testing.T) {
	warmUp(t)
	var rows []faultRow
	defer func() { logFaultRows(t, rows) }()
	for _, fault := range []faults.Fault{faults.Refused, faults.TLSHandshake, faults.ResetBeforeHeaders, faults.NoHeaders, faults.None} {
		for _, path := range paths {
			name := string(fault) + "/" + string(path)
			closeFirst := fault == faults.None // nothing fails on the wire: close the invoker instead
			if closeFirst {
				name = "invoker-closed/" + string(path)
			}
			t.Run(name, func(t *testing.T) {
				goleak.VerifyNone(t)
				row := faultRow{name: name, sent: 1, fdBefore: wiretest.OpenFDs(), goBefore: runtime.NumGoroutine()}
				srv, err := faults.Start(faults.Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { srv.Close() })
				cfg := config(path, "products", srv.URL(fault))
				cfg.Defaults.HeaderTimeout = faultHeaders
				if fault == faults.NoHeaders {
					cfg.Defaults.HeaderTimeout = shortHeaders
				}
				row.allowed = cfg.Defaults.HeaderTimeout
				inv := newInvoker(t, cfg)
				if closeFirst {
					inv.Close()
				}

				pr, pw, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				io.WriteString(pw, `{"query":"{ ok }"}`)
				pw.Close()
				body := &closeRecorder{ReadCloser: pr}
				t.Cleanup(func() { pr.Close() }) // after the checks: a leak must show first
				req, err := http.NewRequest(http.MethodPost, srv.URL(fault), body)
				if err != nil {
					t.Fatal(err)
				}
				started := time.Now()
				resp, err := inv.Do(context.Background(), "products", req)
				row.slowest = time.Since(started)
				if row.slowest > row.allowed+boundSlack {
					t.Errorf("Do took %v, bound %v", row.slowest, row.allowed)
				}
				if err == nil {
					resp.Body.Close()
					t.Fatalf("Do succeeded with %s", resp.Status)
				}
				row.failed = 1
				row.seen = srv.Seen(fault)
				inv.Close()
				srv.Close()
				goleak.VerifyNone(t)
				row.goAft = runtime.NumGoroutine()
				if !body.closed.Load() {
					row.fdAft = wiretest.OpenFDs()
					t.Fatalf("Do returned %q without closing the request body; %d descriptors open, %d before", shortErr(err), row.fdAft, row.fdBefore)
				}
				row.fdAft = wiretest.WaitFDs(row.fdBefore)
				row.got = "error, request body closed: " + shortErr(err)
				rows = append(rows, row)
				if row.fdAft != row.fdBefore {
					t.Errorf("%d descriptors open after the case, %d before", row.fdAft, row.fdBefore)
				}
			})
		}
	}
}
