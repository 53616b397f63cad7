// Package replay serves source schemas that cost nothing: each request is
// answered with the answer the embedded source schemas (package schemas)
// gave to the same body, byte for byte, looked up by the request body.
// Record runs the benchmark gateway (package benchgw) once, in process,
// against the real schemas and keeps every source schema request it sent
// with its answer; Start serves those answers on loopback. The bench's
// constant and constant-latency modes run against it by default, so that the
// gateway, not the source schemas, sets the throughput.
//
//	rec, err := replay.Record(context.Background())
//	if err != nil { ... }
//	srv, err := replay.Start(rec, replay.Options{Latency: 4 * time.Millisecond})
//	if err != nil { ... }
//	defer srv.Close()
//	// srv.URLs["accounts"], ... as schemas.Start gives them
//
// A body that was not recorded gets 404 with a GraphQL error that says so:
// a gateway whose requests differ from the benchmark gateway's (another
// plan, request compression) fails loudly instead of measuring errors.
package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/cmd/fusion-transport/internal/benchgw"
	"github.com/fusiongo/transport/cmd/fusion-transport/internal/load"
	"github.com/fusiongo/transport/cmd/fusion-transport/internal/schemas"
	"github.com/fusiongo/transport/env"
)

// Answer is one recorded source schema answer.
type Answer struct {
	Status      int
	ContentType string
	Body        []byte
}

// Recording maps each source schema name to its answers by request body.
// It is read-only once Record returns.
type Recording map[string]map[string]Answer

// Requests counts the recorded requests of all schemas.
func (r Recording) Requests() int {
	n := 0
	for _, m := range r {
		n += len(m)
	}
	return n
}

// Record starts the embedded source schemas on loopback, sends the
// deep-recursion query once through the benchmark gateway on the legacy
// path, and returns every source schema request the gateway sent with its
// answer. The gateway's plan is fixed and its requests are deterministic, so
// every later gateway request, on any path, sends the same bodies.
func Record(ctx context.Context) (Recording, error) {
	rec := Recording{}
	var mu sync.Mutex
	cfg := env.Config{SourceSchemas: map[string]env.SourceSchema{}}
	var servers []*httptest.Server
	defer func() {
		for _, s := range servers {
			s.Close()
		}
	}()
	for _, name := range schemas.Names {
		h, err := schemas.Handler(name, schemas.Options{})
		if err != nil {
			return nil, err
		}
		rec[name] = map[string]Answer{}
		srv := httptest.NewServer(recorder(h, func(body []byte, a Answer) {
			mu.Lock()
			defer mu.Unlock()
			rec[name][string(body)] = a
		}))
		servers = append(servers, srv)
		cfg.SourceSchemas[name] = env.SourceSchema{URL: srv.URL + schemas.Path}
	}
	inv, err := transport.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("replay: recording: %w", err)
	}
	defer inv.Close()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/graphql", bytes.NewReader(load.DefaultBody))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	benchgw.Handler(inv).ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		return nil, fmt.Errorf("replay: recording: the benchmark gateway answered %d: %s", w.Code, w.Body.Bytes())
	}
	if rec.Requests() == 0 {
		return nil, errors.New("replay: recording: the benchmark gateway sent no source schema request")
	}
	return rec, nil
}

// recorder serves h and reports each POST body with h's answer.
func recorder(h http.Handler, keep func(body []byte, a Answer)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		cw := httptest.NewRecorder()
		h.ServeHTTP(cw, r)
		res := cw.Result()
		a := Answer{Status: res.StatusCode, ContentType: res.Header.Get("Content-Type"), Body: cw.Body.Bytes()}
		if r.Method == http.MethodPost {
			keep(body, a)
		}
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(a.Body)))
		w.Header()["Date"] = nil
		w.WriteHeader(a.Status)
		_, _ = w.Write(a.Body)
	})
}
