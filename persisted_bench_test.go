//go:build unix

package transport_test

import (
	"context"
	"net/http"
	"testing"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/rawhttp"
	"github.com/fusiongo/transport/internal/testsupport/wirecount"
)

// BenchmarkPersistedQueries measures what persisted queries cost a call
// on the client, on every path and engine, for Post and PostFunc: BenchCall's
// 300-byte query (its text long enough to go by hash) answered with 1 KiB of
// JSON data by the zero-allocation responder in a child process, which
// answers a request by hash as it does one with text, so that its work is the
// same either way and client-cpu-ns/op is the client's alone. req-B/op is
// the request bytes written on the connection per call, head and body.
//
//	go test -run '^$' -bench BenchmarkPersistedQueries -benchtime 20000x -count 4 .
func BenchmarkPersistedQueries(b *testing.B) {
	srv := rawhttp.StartBench(b, "TestBenchResponderProcess", benchResponderEnv, benchAnswer, true)
	var buf []byte
	for _, path := range paths {
		for _, apq := range []string{"off", "apq"} {
			for _, form := range []string{"Post", "PostFunc"} {
				b.Run(string(path)+"/"+apq+"/"+form, func(b *testing.B) {
					wire := &wirecount.Bytes{}
					cfg := withSchema(path, srv.URL+"/graphql", func(s *env.SourceSchema) { s.PersistedQueries.Mode = apq })
					inv := newInvoker(b, cfg, transport.WithSchemaOptions("products", transport.SchemaOptions{Dial: wire.Dial}))
					call := func() error {
						resp, err := inv.Post(context.Background(), "products", benchQuery)
						return rawhttp.ReadBody(resp, err, &buf, len(benchAnswer))
					}
					if form == "PostFunc" {
						read := func(resp *http.Response) error { return rawhttp.ReadBody(resp, nil, &buf, len(benchAnswer)) }
						call = func() error { return inv.PostFunc(context.Background(), "products", benchQuery, read) }
					}
					calls := 0 // the warm-up's too: every call writes the same
					srv.Measure(b, warmCalls, func() error {
						calls++
						return call()
					})
					b.ReportMetric(float64(wire.Total())/float64(calls), "req-B/op")
				})
			}
		}
	}
}
