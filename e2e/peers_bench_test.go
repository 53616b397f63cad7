//go:build unix

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/rawhttp"
	"github.com/fusiongo/transport/internal/testsupport/redistest"
	"github.com/fusiongo/transport/sockets"
)

// BenchmarkPeers puts the transport's engines beside the fastest Go client
// in one run: per iteration one source schema call, a POST of a 300-byte
// GraphQL request with two forwarded gateway headers, answered with 1 KiB of
// JSON by the zero-allocation responder of the root's BenchmarkCall
// (internal/testsupport/rawhttp) in a child process, the body read to its
// end. The sides:
//
//   - floor: rawhttp.Client, one write and one read per call, the least a
//     client can do;
//   - fasthttp.HostClient: Do with one pre-built Request and Response
//     reused by every call, as fasthttp users write it;
//   - http.Client: net/http's Client on a cloned DefaultTransport;
//   - sockets.Transport: package sockets' owned transport alone, its
//     RoundTrip with a request built per call, as for http.Client;
//   - sockets:nethttp/Post and sockets:h1/Post: the transport's Post on the
//     sockets path with each engine; legacy/Post the legacy path;
//   - .../PostFunc: the transport's PostFunc, the response borrowed until
//     its callback returns (pooled on sockets:h1);
//   - sockets:h1+cache/Post and /PostFunc: the same with the response
//     cache on (memory store; the responder sends no Cache-Control, so
//     default_ttl stores its answer): after one call before the warm-up,
//     every call is a hit (the benchmark fails on an answer without Age,
//     which only a hit has); sockets:h1+redis the same on the Redis store,
//     a redis-server of its own on loopback (redistest: skipped where
//     there is none), whose CPU is not the client's. Besides allocs/op and client-cpu-ns/op they
//     report x-h1-client-cpu, their client CPU over that of the same API
//     on sockets:h1 measured earlier in the same process, and
//     h1-allocs/op, sockets:h1's allocations there: issue 39's targets
//     compare them. With -count N each sub-benchmark runs N times in a
//     row, so every ratio is to sockets:h1's last run; run the binary N
//     times for interleaved rounds (below).
//
// client-cpu-ns/op is this process's CPU time (user+sys, getrusage) per
// call, its garbage collection included; the responder's runs in its own
// process. It lives in the e2e module because the root module does not
// depend on fasthttp. Run it several times, interleaved, and compare the
// per-run ratios (docs/benchmarks.md):
//
//	cd e2e && for i in 1 2 3 4 5 6; do go test -run '^$' -bench BenchmarkPeers -benchtime 20000x .; done
//	cd e2e && go test -c -o /tmp/e2e.test . && for i in 1 2 3 4 5 6; do /tmp/e2e.test -test.run '^$' -test.bench 'BenchmarkPeers/sockets:h1' -test.benchtime 20000x; done
func BenchmarkPeers(b *testing.B) {
	srv := rawhttp.StartBench(b, "TestPeersResponderProcess", peersResponderEnv, peersAnswer, false)
	url := srv.URL + "/graphql"

	b.Run("floor", func(b *testing.B) {
		c, err := rawhttp.Dial(srv.Addr)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		c.AddHeader("Authorization", peersAuthorization)
		c.AddHeader("X-Request-Id", peersRequestID)
		srv.Measure(b, peersWarmCalls, func() error {
			body, err := c.Post("/graphql", peersQuery)
			return checkLen(len(body), err)
		})
	})

	b.Run("fasthttp.HostClient", func(b *testing.B) {
		hc := &fasthttp.HostClient{Addr: srv.Addr}
		defer hc.CloseIdleConnections()
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI(url)
		req.Header.SetMethod(fasthttp.MethodPost)
		req.Header.SetContentType(peersContentType)
		req.Header.Set("Accept", peersAccept)
		req.Header.Set("Authorization", peersAuthorization)
		req.Header.Set("X-Request-Id", peersRequestID)
		req.SetBody(peersQuery)
		srv.Measure(b, peersWarmCalls, func() error {
			if err := hc.Do(req, resp); err != nil {
				return err
			}
			if resp.StatusCode() != fasthttp.StatusOK {
				return fmt.Errorf("status %d", resp.StatusCode())
			}
			return checkLen(len(resp.Body()), nil)
		})
	})

	var buf []byte // the response body, reused by every call
	b.Run("http.Client", func(b *testing.B) {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr}
		srv.Measure(b, peersWarmCalls, func() error {
			req, err := peersRequest(url)
			if err != nil {
				return err
			}
			resp, err := client.Do(req)
			return rawhttp.ReadBody(resp, err, &buf, len(peersAnswer))
		})
	})

	// sockets.Transport alone, as an http.RoundTripper (the way a
	// HostClient is used): the caller builds each request, as with
	// net/http's Client, and the request path (header rules, retry, ...)
	// is not in front.
	b.Run("sockets.Transport", func(b *testing.B) {
		rt, err := sockets.New(sockets.Config{Name: "products", URL: url, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		defer rt.Close()
		srv.Measure(b, peersWarmCalls, func() error {
			req, err := peersRequest(url)
			if err != nil {
				return err
			}
			resp, err := rt.RoundTrip(req)
			return rawhttp.ReadBody(resp, err, &buf, len(peersAnswer))
		})
	})

	gateway, _ := http.NewRequest(http.MethodPost, "http://gateway.test/graphql", nil)
	gateway.Header.Set("Authorization", peersAuthorization)
	gateway.Header.Set("X-Request-Id", peersRequestID)
	gctx := transport.WithGatewayRequest(context.Background(), gateway)
	h1 := map[string]rawhttp.Measured{} // sockets:h1's, by API, of this run
	for _, side := range []struct {
		name   string
		path   env.Path
		engine string
		store  string // the response cache's store; "": no cache
	}{
		{"sockets:h1", env.PathSockets, env.EngineH1, ""},
		{"sockets:h1+cache", env.PathSockets, env.EngineH1, env.StoreMemory},
		{"sockets:h1+redis", env.PathSockets, env.EngineH1, env.StoreRedis},
		{"sockets:nethttp", env.PathSockets, env.EngineNetHTTP, ""},
		{"legacy", env.PathLegacy, "", ""},
	} {
		b.Run(side.name, func(b *testing.B) {
			cache := side.store != ""
			schema := env.SourceSchema{URL: url}
			if cache {
				schema.ResponseCache = env.ResponseCacheSettings{
					Enabled: env.Enabled, Store: side.store, MaxBytes: env.DefaultCacheMaxBytes,
					MaxEntryBytes: env.DefaultCacheMaxEntryBytes, DefaultTTL: time.Hour, MaxTTL: time.Hour,
				}
			}
			cfg := env.Config{
				Path:           side.path,
				ForwardHeaders: []string{"Authorization", "X-Request-Id"},
				Defaults:       env.Settings{Engine: side.engine},
				SourceSchemas:  map[string]env.SourceSchema{"products": schema},
			}
			if side.store == env.StoreRedis {
				cfg.Redis = redistest.StartRedis(b).Settings() // skips without a Redis
			}
			inv, err := transport.New(cfg,
				transport.WithLookupEnv(func(string) (string, bool) { return "", false }),
				transport.WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				b.Fatal(err)
			}
			defer inv.Close()
			if cache {
				// The misses before the first hit store the answer that
				// every call of the warm-up and the loop gets (Redis is
				// written off the caller's goroutine: a few calls may miss
				// before the write lands).
				for try := 0; ; try++ {
					resp, err := inv.Post(gctx, "products", peersQuery)
					hit := err == nil && resp.Header["Age"] != nil
					if err = rawhttp.ReadBody(resp, err, &buf, len(peersAnswer)); err != nil {
						b.Fatal(err)
					}
					if hit {
						break
					}
					if try == 10000 {
						b.Fatal("no hit after 10,000 calls: the answer is not stored")
					}
				}
			}
			// measured reports a cache side's figures against sockets:h1's
			// of this run; keeps sockets:h1's.
			measured := func(b *testing.B, api string, m rawhttp.Measured) {
				switch {
				case side.name == "sockets:h1":
					h1[api] = m
				case cache && h1[api].ClientCPU > 0:
					b.ReportMetric(m.ClientCPU/h1[api].ClientCPU, "x-h1-client-cpu")
					b.ReportMetric(h1[api].Allocs, "h1-allocs/op")
				}
			}
			b.Run("Post", func(b *testing.B) {
				measured(b, "Post", srv.Measure(b, peersWarmCalls, func() error {
					resp, err := inv.Post(gctx, "products", peersQuery)
					if err == nil && cache && resp.Header["Age"] == nil {
						err = errNotHit
					}
					return rawhttp.ReadBody(resp, err, &buf, len(peersAnswer))
				}))
			})
			// PostFunc: the response borrowed until the callback returns.
			read := func(resp *http.Response) error {
				if cache && resp.Header["Age"] == nil {
					resp.Body.Close()
					return errNotHit
				}
				return rawhttp.ReadBody(resp, nil, &buf, len(peersAnswer))
			}
			b.Run("PostFunc", func(b *testing.B) {
				measured(b, "PostFunc", srv.Measure(b, peersWarmCalls, func() error {
					return inv.PostFunc(gctx, "products", peersQuery, read)
				}))
			})
		})
	}
}

// The request and the answer of every call: rawhttp's, which the root's
// BenchmarkCall sends too.
var (
	peersQuery         = rawhttp.BenchQuery
	peersAnswer        = rawhttp.BenchAnswer
	peersContentType   = rawhttp.BenchContentType
	peersAccept        = rawhttp.BenchAccept
	peersAuthorization = rawhttp.BenchAuthorization
	peersRequestID     = rawhttp.BenchRequestID
)

// peersRequest builds one call's request as a net/http user does: a new
// request with the query and the four headers.
func peersRequest(url string) (*http.Request, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(peersQuery))
	if err != nil {
		return nil, err
	}
	req.Header["Content-Type"] = []string{peersContentType}
	req.Header["Accept"] = []string{peersAccept}
	req.Header["Authorization"] = []string{peersAuthorization}
	req.Header["X-Request-Id"] = []string{peersRequestID}
	return req, nil
}

// errNotHit fails a cache side's call whose answer came from the
// responder: only a hit carries Age.
var errNotHit = errors.New("the answer has no Age: not a response cache hit")

func checkLen(n int, err error) error {
	if err == nil && n != len(peersAnswer) {
		err = fmt.Errorf("body of %d bytes, want %d", n, len(peersAnswer))
	}
	return err
}

// peersWarmCalls run before the measured loop, so that the connection is
// open and every buffer and pool has grown.
const peersWarmCalls = 200

// peersResponderEnv turns this test binary into BenchmarkPeers' responder
// process; see TestPeersResponderProcess.
const peersResponderEnv = "TRANSPORT_PEERS_RESPONDER"

// TestPeersResponderProcess is not a test: it is the body of
// BenchmarkPeers' responder process, and skips unless
// TRANSPORT_PEERS_RESPONDER is set. It prints "addr=host:port", answers each
// "cpu" line on its input with "cpu=<ns>", and exits at the end of its input.
func TestPeersResponderProcess(t *testing.T) {
	rawhttp.ServeChild(t, peersResponderEnv, peersAnswer)
}
