//go:build unix

package transport_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
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
	srv := rawhttp.StartBench(b, "TestBenchResponderProcess", benchResponderEnv, benchAnswer, true)
	url := srv.URL + "/graphql"
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
		c, err := rawhttp.Dial(srv.Addr)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		c.AddHeader("Authorization", benchAuthorization[0])
		c.AddHeader("X-Request-Id", benchRequestID[0])
		srv.Measure(b, warmCalls, func() error {
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
		srv.Measure(b, warmCalls, func() error {
			req, err := newRequest(true)
			if err != nil {
				return err
			}
			resp, err := client.Do(req)
			return rawhttp.ReadBody(resp, err, &buf, len(benchAnswer))
		})
	})

	b.Run("Transport.RoundTrip", func(b *testing.B) {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		defer tr.CloseIdleConnections()
		srv.Measure(b, warmCalls, func() error {
			req, err := newRequest(true)
			if err != nil {
				return err
			}
			resp, err := tr.RoundTrip(req)
			return rawhttp.ReadBody(resp, err, &buf, len(benchAnswer))
		})
	})

	b.Run("ClientConn.RoundTrip", func(b *testing.B) {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		cc, err := tr.NewClientConn(context.Background(), "http", srv.Addr)
		if err != nil {
			b.Fatal(err)
		}
		defer func() { cc.Close() }()
		srv.Measure(b, warmCalls, func() error {
			if cc.Err() != nil {
				// net/http closed it, as it does when its write goroutine
				// reports later than 50 ms (maxWriteWaitBeforeConnReuse)
				// on a loaded machine: dial again, as a pool would.
				cc.Close()
				if cc, err = tr.NewClientConn(context.Background(), "http", srv.Addr); err != nil {
					return err
				}
			}
			req, err := newRequest(true)
			if err != nil {
				return err
			}
			resp, err := cc.RoundTrip(req)
			return rawhttp.ReadBody(resp, err, &buf, len(benchAnswer))
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
				srv.Measure(b, warmCalls, func() error {
					req, err := newRequest(false)
					if err != nil {
						return err
					}
					resp, err := inv.Do(gctx, "products", req)
					return rawhttp.ReadBody(resp, err, &buf, len(benchAnswer))
				})
			})
			b.Run("Post", func(b *testing.B) {
				srv.Measure(b, warmCalls, func() error {
					resp, err := inv.Post(gctx, "products", benchQuery)
					return rawhttp.ReadBody(resp, err, &buf, len(benchAnswer))
				})
			})
			// PostFunc: the response borrowed until the callback returns,
			// pooled on the h1 engine.
			read := func(resp *http.Response) error {
				return rawhttp.ReadBody(resp, nil, &buf, len(benchAnswer))
			}
			b.Run("PostFunc", func(b *testing.B) {
				srv.Measure(b, warmCalls, func() error {
					return inv.PostFunc(gctx, "products", benchQuery, read)
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
				srv.Measure(b, warmCalls, func() error {
					resp, err := withBreaker.Post(gctx, "products", benchQuery)
					return rawhttp.ReadBody(resp, err, &buf, len(benchAnswer))
				})
			})
		})
	}
}

// warmCalls run before the measured loop, so that the connection is open
// and every buffer and pool has grown.
const warmCalls = 200

// The exchange of every call (rawhttp's, which BenchmarkPeers makes too),
// the header values as the one-element slices a header map holds.
var (
	benchQuery         = rawhttp.BenchQuery
	benchAnswer        = rawhttp.BenchAnswer
	benchContentType   = []string{rawhttp.BenchContentType}
	benchAuthorization = []string{rawhttp.BenchAuthorization}
	benchRequestID     = []string{rawhttp.BenchRequestID}
	benchAccept        = []string{rawhttp.BenchAccept}
)

// benchResponderEnv turns this test binary into BenchmarkCall's responder
// process; see TestBenchResponderProcess.
const benchResponderEnv = "TRANSPORT_BENCH_RESPONDER"

// TestBenchResponderProcess is not a test: it is the body of BenchmarkCall's
// responder process, and skips unless TRANSPORT_BENCH_RESPONDER is set. It
// prints "addr=host:port", answers each "cpu" line on its input with
// "cpu=<ns>", its CPU time so far, and exits at the end of its input without
// returning to the test framework.
func TestBenchResponderProcess(t *testing.T) {
	rawhttp.ServeChild(t, benchResponderEnv, benchAnswer)
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
	srv := rawhttp.StartBench(b, "TestBenchResponderProcess", benchResponderEnv, benchAnswer, true)
	for _, path := range paths {
		b.Run(string(path), func(b *testing.B) {
			cfg := config(path, "products", srv.URL+"/graphql")
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
			self0 := rawhttp.CPUTime()
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
			b.ReportMetric(float64(rawhttp.CPUTime()-self0)/float64(n), "client-cpu-ns/op")
		})
	}
}
