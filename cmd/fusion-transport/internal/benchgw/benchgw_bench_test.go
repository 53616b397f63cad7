package benchgw_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/cmd/fusion-transport/internal/benchgw"
	"github.com/fusiongo/transport/env"
)

// BenchmarkGateway answers the deep-recursion query on each path against
// the embedded source schemas, which run in the same process: ns/op and
// allocs/op include the source schemas' work.
func BenchmarkGateway(b *testing.B) {
	urls := startSchemas(b)
	for _, path := range []env.Path{env.PathLegacy, env.PathSockets} {
		b.Run(string(path), func(b *testing.B) {
			cfg := env.Config{Path: path, SourceSchemas: map[string]env.SourceSchema{}}
			for name, u := range urls {
				cfg.SourceSchemas[name] = env.SourceSchema{URL: u}
			}
			inv, err := transport.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer inv.Close()
			serve(b, benchgw.Handler(inv))
		})
	}
}

// BenchmarkPlan measures the gateway's own work, building requests and
// parsing and merging answers, with an invoker that replays recorded source
// schema answers: no HTTP at all.
func BenchmarkPlan(b *testing.B) {
	urls := startSchemas(b)
	cfg := env.Config{SourceSchemas: map[string]env.SourceSchema{}}
	for name, u := range urls {
		cfg.SourceSchemas[name] = env.SourceSchema{URL: u}
	}
	live, err := transport.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer live.Close()
	rec := &replay{Invoker: live, answers: map[string][]byte{}}
	answerOnce(b, benchgw.Handler(rec)) // records
	rec.replaying = true
	serve(b, benchgw.Handler(rec))
}

func serve(b *testing.B, h http.Handler) {
	b.ReportAllocs()
	for b.Loop() {
		answerOnce(b, h)
	}
}

func answerOnce(tb testing.TB, h http.Handler) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(`{}`)))
	if rec.Code != http.StatusOK {
		tb.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
}

// replay records the answers of the invoker it wraps, keyed by schema and
// request body, then answers from the record.
type replay struct {
	transport.Invoker
	mu        sync.Mutex
	answers   map[string][]byte
	replaying bool
}

func (r *replay) Post(ctx context.Context, schema string, body []byte) (*http.Response, error) {
	key := schema + " " + string(body)
	r.mu.Lock()
	answer, ok := r.answers[key]
	r.mu.Unlock()
	if !r.replaying || !ok {
		resp, err := r.Invoker.Post(ctx, schema, body)
		if err != nil {
			return nil, err
		}
		answer, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		r.mu.Lock()
		r.answers[key] = answer
		r.mu.Unlock()
	}
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(bytes.NewReader(answer))}, nil
}
