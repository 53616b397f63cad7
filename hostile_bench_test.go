//go:build unix

package transport_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// The two benchmarks below measure how often a hostile source schema gets
// a wrong answer or an error to a caller, on every path in one run. They
// are measurements, not tests: the legacy path is net/http's own pool,
// whose rates this project reports (docs/reliability.md) but does not
// own. The sockets path's rules (no wrong answer at all; at most 1 in 10
// spaced Posts failed) are asserted by internal/sockets'
// TestHostileStrayResponse and TestHostileStaleIdleConnections.

// BenchmarkHostileStrayResponse: 8 callers share 2 connections to a server
// that follows each answer with an unasked one (kind "response") or with
// bytes past a short Content-Length (kind "overrun"), RFC 9112 section
// 9.2. One iteration is one call. Metrics: wrong/1000 (a caller got an
// answer that was not its own) and errors/1000.
//
//	go test -run '^$' -bench BenchmarkHostileStrayResponse -benchtime 1000x -count 6 .
func BenchmarkHostileStrayResponse(b *testing.B) {
	// net/http logs each unsolicited response through the standard logger.
	log.SetOutput(io.Discard)
	b.Cleanup(func() { log.SetOutput(os.Stderr) })
	for _, kind := range []string{"response", "overrun"} {
		for _, path := range paths {
			b.Run(kind+"/"+string(path), func(b *testing.B) {
				srv := wiretest.NewStrayServer(b, kind)
				cfg := config(path, "products", srv.URL)
				cfg.Defaults.MaxConnsPerHost = 2
				cfg.ForwardHeaders = []string{"X-Call"}
				inv := newInvoker(b, cfg)
				var next, wrong, failed atomic.Int64
				var mu sync.Mutex
				var firstWrong string
				b.SetParallelism(4) // 8 callers on 2 cores
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						id := fmt.Sprint(next.Add(1))
						resp, err := inv.Post(gatewayCtx("X-Call", id), "products", []byte(`{"query":"{ call }"}`))
						var body []byte
						if err == nil {
							body, err = io.ReadAll(resp.Body)
							resp.Body.Close()
						}
						switch {
						case err != nil:
							failed.Add(1)
						case string(body) != `{"data":{"call":"`+id+`"}}`:
							if wrong.Add(1) == 1 {
								mu.Lock()
								firstWrong = fmt.Sprintf("call %s got %s", id, body)
								mu.Unlock()
							}
						}
					}
				})
				reportPer1000(b, wrong.Load(), failed.Load())
				if firstWrong != "" {
					b.Logf("first wrong answer: %s", firstWrong)
				}
			})
		}
	}
}

// BenchmarkHostileStaleIdle: a server closes idle connections after 20ms,
// and Posts come one at a time, spaced 15 to 25ms (the load's shape, not a
// synchronisation), so that many are written just as the server closes
// their connection. One iteration is one Post. Metric: errors/1000.
//
//	go test -run '^$' -bench BenchmarkHostileStaleIdle -benchtime 300x -count 6 .
func BenchmarkHostileStaleIdle(b *testing.B) {
	for _, path := range paths {
		b.Run(string(path), func(b *testing.B) {
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, `{"data":{}}`)
			}))
			srv.Config.IdleTimeout = 20 * time.Millisecond
			srv.Start()
			b.Cleanup(srv.Close)
			inv := newInvoker(b, config(path, "products", srv.URL+"/graphql"))
			var failed int64
			i := 0
			for b.Loop() {
				resp, err := inv.Post(context.Background(), "products", []byte(`{"query":"{ ok }"}`))
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if err != nil {
					failed++
				}
				time.Sleep(time.Duration(15+i%11) * time.Millisecond)
				i++
			}
			reportPer1000(b, -1, failed)
		})
	}
}

// reportPer1000 reports wrong answers (unless negative) and errors per
// 1,000 iterations.
func reportPer1000(b *testing.B, wrong, failed int64) {
	if wrong >= 0 {
		b.ReportMetric(float64(wrong)*1000/float64(b.N), "wrong/1000")
	}
	b.ReportMetric(float64(failed)*1000/float64(b.N), "errors/1000")
}
