//go:build unix

package transport_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/rawhttp"
)

// BenchmarkCall measures one source schema call per iteration: a POST of a
// 300-byte GraphQL request answered with 1 KiB of JSON by a zero-allocation
// HTTP/1.1 responder on loopback, the body read to its end and closed. All
// variants run in one run, from a hand-written client (the floor) through
// bare net/http to both paths' Do and Post, so that their differences are
// the cost of each layer. PostBreaker is Post with the circuit breaker on
// (and closed): its difference from Post is the breaker's cost.
//
// Metrics besides ns/op, B/op and allocs/op:
//
//   - client-cpu-ns/op: CPU time (user+sys, getrusage RUSAGE_SELF) of this
//     process per call, including its garbage collection. The responder
//     runs in a child process (this test binary, re-run as
//     TestBenchResponderProcess), so this is the client's CPU alone.
//   - cpu-ns/op: client and responder CPU together per call. If the child
//     process cannot start, the responder runs in this process instead, and
//     only cpu-ns/op is reported: RUSAGE_SELF then counts both sides.
//
// The allocation counts are the client's alone in either case: the
// responder allocates nothing per request (see internal/testsupport/rawhttp).
//
//	go test -run '^$' -bench BenchmarkCall -benchtime 20000x -count 6 .
func BenchmarkCall(b *testing.B) {
	srv := startBenchResponder(b)
	url := srv.url + "/graphql"
	gctx := gatewayCtx("Authorization", benchAuthorization[0], "X-Request-Id", benchRequestID[0])

	// The bare net/http variants send what the invokers put on the wire:
	// the two media types and the two forwarded gateway headers.
	newRequest := func(forwarded bool) (*http.Request, error) {
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(benchQuery))
		if err != nil {
			return nil, err
		}
		req.Header["Content-Type"] = benchContentType
		req.Header["Accept"] = benchAccept
		if forwarded {
			req.Header["Authorization"] = benchAuthorization
			req.Header["X-Request-Id"] = benchRequestID
		}
		return req, nil
	}
	var buf []byte // the response body, reused by every call

	b.Run("floor", func(b *testing.B) {
		c, err := rawhttp.Dial(srv.addr)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		c.AddHeader("Authorization", benchAuthorization[0])
		c.AddHeader("X-Request-Id", benchRequestID[0])
		measure(b, srv, func() error {
			body, err := c.Post("/graphql", benchQuery)
			if err == nil && len(body) != len(benchAnswer) {
				err = fmt.Errorf("body of %d bytes, want %d", len(body), len(benchAnswer))
			}
			return err
		})
	})

	b.Run("http.Client", func(b *testing.B) {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr}
		measure(b, srv, func() error {
			req, err := newRequest(true)
			if err != nil {
				return err
			}
			resp, err := client.Do(req)
			return readBody(resp, err, &buf)
		})
	})

	b.Run("Transport.RoundTrip", func(b *testing.B) {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		defer tr.CloseIdleConnections()
		measure(b, srv, func() error {
			req, err := newRequest(true)
			if err != nil {
				return err
			}
			resp, err := tr.RoundTrip(req)
			return readBody(resp, err, &buf)
		})
	})

	b.Run("ClientConn.RoundTrip", func(b *testing.B) {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		cc, err := tr.NewClientConn(context.Background(), "http", srv.addr)
		if err != nil {
			b.Fatal(err)
		}
		defer func() { cc.Close() }()
		measure(b, srv, func() error {
			if cc.Err() != nil {
				// net/http closed it, as it does when its write goroutine
				// reports later than 50 ms (maxWriteWaitBeforeConnReuse)
				// on a loaded machine: dial again, as a pool would.
				cc.Close()
				if cc, err = tr.NewClientConn(context.Background(), "http", srv.addr); err != nil {
					return err
				}
			}
			req, err := newRequest(true)
			if err != nil {
				return err
			}
			resp, err := cc.RoundTrip(req)
			return readBody(resp, err, &buf)
		})
	})

	for _, path := range paths {
		b.Run(string(path), func(b *testing.B) {
			cfg := config(path, "products", url)
			cfg.ForwardHeaders = []string{"Authorization", "X-Request-Id"}
			inv, err := transport.New(cfg, transport.WithLookupEnv(noEnv), transport.WithLogger(quiet))
			if err != nil {
				b.Fatal(err)
			}
			defer inv.Close()
			b.Run("Do", func(b *testing.B) {
				measure(b, srv, func() error {
					req, err := newRequest(false)
					if err != nil {
						return err
					}
					resp, err := inv.Do(gctx, "products", req)
					return readBody(resp, err, &buf)
				})
			})
			b.Run("Post", func(b *testing.B) {
				measure(b, srv, func() error {
					resp, err := inv.Post(gctx, "products", benchQuery)
					return readBody(resp, err, &buf)
				})
			})
			// Post through a closed circuit breaker (circuit_breaker.enabled):
			// the difference from Post is the breaker's cost per call.
			cfg.Defaults.CircuitBreaker.Enabled = env.Enabled
			withBreaker, err := transport.New(cfg, transport.WithLookupEnv(noEnv), transport.WithLogger(quiet))
			if err != nil {
				b.Fatal(err)
			}
			defer withBreaker.Close()
			b.Run("PostBreaker", func(b *testing.B) {
				measure(b, srv, func() error {
					resp, err := withBreaker.Post(gctx, "products", benchQuery)
					return readBody(resp, err, &buf)
				})
			})
		})
	}
}

// warmCalls run before the measured loop, so that the connection is open
// and every buffer and pool has grown.
const warmCalls = 200

// measure runs call in a b.Loop and reports allocations and CPU per call.
func measure(b *testing.B, srv *benchResponder, call func() error) {
	b.Helper()
	for range warmCalls {
		if err := call(); err != nil {
			b.Fatalf("warm-up: %v", err)
		}
	}
	b.ReportAllocs()
	self0, peer0 := cpuTime(), srv.cpu(b)
	n := 0
	for b.Loop() {
		if err := call(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	self, peer := cpuTime()-self0, srv.cpu(b)-peer0
	if srv.child == nil {
		// In-process responder: RUSAGE_SELF holds both sides.
		b.ReportMetric(float64(self)/float64(n), "cpu-ns/op")
		return
	}
	b.ReportMetric(float64(self)/float64(n), "client-cpu-ns/op")
	b.ReportMetric(float64(self+peer)/float64(n), "cpu-ns/op")
}

// readBody takes a round trip's result, reads the body to its end into
// *buf (io.ReadAll would allocate a new buffer per call), closes it and
// checks the answer. It allocates only on errors.
func readBody(resp *http.Response, err error, buf *[]byte) error {
	if err != nil {
		return err
	}
	b := (*buf)[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, rerr := resp.Body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			resp.Body.Close()
			return rerr
		}
	}
	*buf = b
	if err := resp.Body.Close(); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || len(b) != len(benchAnswer) {
		return fmt.Errorf("%s with a body of %d bytes, want 200 with %d", resp.Status, len(b), len(benchAnswer))
	}
	return nil
}

// cpuTime returns the user and system CPU time of this process.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// The request and the answer of every call: a 300-byte GraphQL request and
// a 1 KiB JSON result, both padded to their size with JSON whitespace.
var (
	benchQuery  = padJSON(`{"query":"query TopProducts($first: Int!) { topProducts(first: $first) { upc name price weight inStock shippingEstimate reviews { id body author { id username } } } }","operationName":"TopProducts","variables":{"first":5}}`, 300)
	benchAnswer = func() []byte {
		var sb strings.Builder
		sb.WriteString(`{"data":{"topProducts":[`)
		for i := 1; sb.Len() < 900; i++ {
			if i > 1 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `{"upc":"%d","name":"Product %d","price":%d,"weight":%d,"inStock":true}`, i, i, 100*i+99, 10+i)
		}
		sb.WriteString(`]}}`)
		return padJSON(sb.String(), 1024)
	}()
	benchContentType   = []string{"application/json; charset=utf-8"}
	benchAuthorization = []string{"Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJiZW5jaCJ9.c2lnbmF0dXJlLW9mLWEtYmVuY2gtdG9rZW4"}
	benchRequestID     = []string{"3f6c2a1e-9b7d-4e0a-8c55-1d2e3f4a5b6c"}
	benchAccept        = []string{"application/graphql-response+json; charset=utf-8, application/json; charset=utf-8"}
)

// padJSON returns the JSON object s with spaces before its closing brace
// up to size bytes. It panics if s is longer.
func padJSON(s string, size int) []byte {
	if len(s) > size {
		panic(fmt.Sprintf("padJSON: %d bytes is more than %d", len(s), size))
	}
	return []byte(s[:len(s)-1] + strings.Repeat(" ", size-len(s)) + "}")
}

// benchResponderEnv turns this test binary into BenchmarkCall's responder
// process; see TestBenchResponderProcess.
const benchResponderEnv = "TRANSPORT_BENCH_RESPONDER"

// benchResponder is BenchmarkCall's responder: a child process, or, if it
// cannot start, a responder in this process.
type benchResponder struct {
	addr, url string
	child     *exec.Cmd
	stdin     io.WriteCloser
	stdout    *bufio.Reader
}

// startBenchResponder runs the responder in a child process so that
// RUSAGE_SELF counts the client alone, and stops it when b ends.
func startBenchResponder(b *testing.B) *benchResponder {
	srv, err := startChildResponder()
	if err == nil {
		b.Cleanup(func() {
			srv.stdin.Close() // the child exits at the end of its input
			srv.child.Wait()
		})
		return srv
	}
	b.Logf("responder in this process (cpu-ns/op includes it): %v", err)
	r, err := rawhttp.Start(benchAnswer)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	return &benchResponder{addr: r.Addr(), url: r.URL()}
}

func startChildResponder() (*benchResponder, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "-test.run=^TestBenchResponderProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), benchResponderEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	srv := &benchResponder{child: cmd, stdin: stdin, stdout: bufio.NewReader(stdout)}
	// The child's first line of its own is its address.
	for {
		line, err := srv.stdout.ReadString('\n')
		if err != nil {
			stdin.Close()
			cmd.Wait()
			return nil, fmt.Errorf("responder process: %w", err)
		}
		if addr, ok := strings.CutPrefix(strings.TrimSpace(line), "addr="); ok {
			srv.addr, srv.url = addr, "http://"+addr
			return srv, nil
		}
	}
}

// cpu returns the responder process's CPU time, or 0 for an in-process
// responder.
func (s *benchResponder) cpu(b *testing.B) int64 {
	if s.child == nil {
		return 0
	}
	if _, err := io.WriteString(s.stdin, "cpu\n"); err != nil {
		b.Fatalf("responder process: %v", err)
	}
	line, err := s.stdout.ReadString('\n')
	if err != nil {
		b.Fatalf("responder process: %v", err)
	}
	ns, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(line), "cpu="), 10, 64)
	if err != nil {
		b.Fatalf("responder process: %q: %v", line, err)
	}
	return ns
}

// TestBenchResponderProcess is not a test: it is the body of BenchmarkCall's
// responder process, and skips unless TRANSPORT_BENCH_RESPONDER is set. It
// prints "addr=host:port", answers each "cpu" line on its input with
// "cpu=<ns>", its CPU time so far, and exits at the end of its input without
// returning to the test framework.
func TestBenchResponderProcess(t *testing.T) {
	if os.Getenv(benchResponderEnv) != "1" {
		t.Skip("BenchmarkCall's responder process; runs only when the benchmark starts it")
	}
	r, err := rawhttp.Start(benchAnswer)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("addr=%s\n", r.Addr())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() == "cpu" {
			fmt.Printf("cpu=%d\n", cpuTime())
		}
	}
	r.Close()
	os.Exit(0)
}

// BenchmarkCrowd measures a crowd: each iteration, 4,000 Posts arrive at
// once behind max_conns_per_host 4, against the zero-allocation responder
// in its child process. client-cpu-ns/op is this process's CPU per
// request: what queueing for a connection costs. Before the FIFO queue the
// sockets path woke every waiter on each freed slot (908us a request
// against legacy's 153us).
//
//	go test -run '^$' -bench BenchmarkCrowd -benchtime 3x -count 4 .
func BenchmarkCrowd(b *testing.B) {
	const crowd = 4000
	srv := startBenchResponder(b)
	for _, path := range paths {
		b.Run(string(path), func(b *testing.B) {
			cfg := config(path, "products", srv.url+"/graphql")
			cfg.Defaults.MaxConnsPerHost = 4
			cfg.Defaults.MaxIdleConnsPerHost = 4
			cfg.Defaults.MaxPendingRequests = env.NoLimit // the whole crowd may wait (max_pending_requests' default is 1024)
			inv, err := transport.New(cfg, transport.WithLookupEnv(noEnv), transport.WithLogger(quiet))
			if err != nil {
				b.Fatal(err)
			}
			defer inv.Close()
			call := func() error {
				resp, err := inv.Post(context.Background(), "products", benchQuery)
				if err != nil {
					return err
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return err
			}
			b.ReportAllocs()
			self0 := cpuTime()
			n := 0
			for b.Loop() {
				var wg sync.WaitGroup
				errs := make(chan error, crowd)
				for range crowd {
					wg.Go(func() {
						if err := call(); err != nil {
							errs <- err
						}
					})
				}
				wg.Wait()
				close(errs)
				if err := <-errs; err != nil {
					b.Fatal(err)
				}
				n += crowd
			}
			b.ReportMetric(float64(cpuTime()-self0)/float64(n), "client-cpu-ns/op")
		})
	}
}
