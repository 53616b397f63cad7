package benchgw

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/internal/testsupport/wirecount"
)

// maxRequestBody bounds what the gateway reads (and throws away) of a
// request body; the plan ignores it, but reading it keeps the connection
// usable for the next request.
const maxRequestBody = 1 << 20

// Gateway answers the deep-recursion query. It is safe for concurrent use.
// Serve it behind transport.GatewayRequestHandler (as Handler does), so that the
// invoker forwards the gateway request's headers.
type Gateway struct {
	inv  transport.Invoker
	wire *wirecount.Bytes // the request bytes sent to the source schemas; nil: not counted (CountWire)

	requests atomic.Uint64 // gateway requests answered, failed ones included
	failures atomic.Uint64 // gateway requests answered with 502
	calls    atomic.Uint64 // source schema requests sent by the answered requests
}

// execution is one gateway request under way.
type execution struct {
	g     *Gateway
	calls atomic.Uint64 // source schema requests sent so far
}

var _ http.Handler = (*Gateway)(nil)

// New returns a gateway that sends its source schema requests through inv.
func New(inv transport.Invoker) *Gateway {
	return &Gateway{inv: inv}
}

// CountWire makes Stats report w's total as SourceSchemaRequestBytes: w
// must be the Dial of every source schema of the gateway's invoker. Call it
// before the gateway serves.
func (g *Gateway) CountWire(w *wirecount.Bytes) { g.wire = w }

// Handler returns a gateway on inv wrapped in transport.GatewayRequestHandler: the
// handler to serve at /graphql.
func Handler(inv transport.Invoker) http.Handler {
	return transport.GatewayRequestHandler(New(inv))
}

// ServeHTTP answers a POST with the deep-recursion query's answer, whatever
// the body holds; other methods get 405.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed: use POST")
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxRequestBody))
	x := &execution{g: g}
	defer func() {
		// The calls count when their request does, so that two readings of
		// Stats divide into calls per request even with requests in flight.
		g.calls.Add(x.calls.Load())
		g.requests.Add(1)
	}()

	res, err := x.run(r.Context())
	if err != nil {
		g.failures.Add(1)
		writeError(w, http.StatusBadGateway, err.Error())
		return
	}
	buf := getBuffer()
	defer putBuffer(buf)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false) // strings cross as the source schemas sent them
	if err := enc.Encode(res); err != nil {
		g.failures.Add(1)
		writeError(w, http.StatusInternalServerError, "encoding the response: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// Stats are the gateway's counters since New.
type Stats struct {
	// Requests counts the gateway requests answered, failed ones included.
	Requests uint64 `json:"requests"`
	// Failures counts the gateway requests answered with an error status.
	Failures uint64 `json:"failures"`
	// SourceSchemaCalls counts the source schema requests sent by the
	// answered requests: a request's calls count once it is answered.
	SourceSchemaCalls uint64 `json:"source_schema_calls"`
	// SourceSchemaRequestBytes counts the bytes written to the source
	// schemas, request heads and bodies (CountWire); 0 when not counted.
	SourceSchemaRequestBytes uint64 `json:"source_schema_request_bytes,omitempty"`
}

// Stats returns the counters.
func (g *Gateway) Stats() Stats {
	s := Stats{
		Requests:          g.requests.Load(),
		Failures:          g.failures.Load(),
		SourceSchemaCalls: g.calls.Load(),
	}
	if g.wire != nil {
		s.SourceSchemaRequestBytes = g.wire.Total()
	}
	return s
}

// The runtime/metrics that DebugStats reports: the heap allocations of the
// whole process since it started.
const (
	AllocBytesMetric   = "/gc/heap/allocs:bytes"
	AllocObjectsMetric = "/gc/heap/allocs:objects"
)

// DebugStats is the answer of StatsHandler: the gateway's counters and the
// process's cumulative heap allocations, read at the same moment, so that
// two readings give allocations per request.
type DebugStats struct {
	Stats
	// Metrics holds AllocBytesMetric and AllocObjectsMetric.
	Metrics map[string]uint64 `json:"metrics"`
}

// StatsHandler serves DebugStats as JSON (the gateway command mounts it at
// /debug/stats).
func (g *Gateway) StatsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		samples := []metrics.Sample{{Name: AllocBytesMetric}, {Name: AllocObjectsMetric}}
		metrics.Read(samples)
		s := DebugStats{Stats: g.Stats(), Metrics: make(map[string]uint64, len(samples))}
		for _, m := range samples {
			if m.Value.Kind() == metrics.KindUint64 {
				s.Metrics[m.Name] = m.Value.Uint64()
			}
		}
		body, err := json.Marshal(s)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, body)
	})
}

// get sends body to schema and decodes the answer's data as D. GraphQL
// errors, a missing data field and any status but 200 are errors naming the
// schema.
func get[D any](ctx context.Context, x *execution, schema string, body []byte) (*D, error) {
	var a answer[D]
	if err := x.call(ctx, schema, body, &a); err != nil {
		return nil, err
	}
	if len(a.Errors) > 0 {
		return nil, fmt.Errorf("source schema %q: %s", schema, a.Errors[0].Message)
	}
	if a.Data == nil {
		return nil, fmt.Errorf("source schema %q: an answer without data", schema)
	}
	return a.Data, nil
}

// getEntities sends the alias-batched fetches to schema in one request.
func getEntities[D any](ctx context.Context, x *execution, schema string, fetches []entitiesFetch) (*D, error) {
	body, err := entitiesRequest(fetches)
	if err != nil {
		return nil, fmt.Errorf("source schema %q: building the request: %w", schema, err)
	}
	return get[D](ctx, x, schema, body)
}

// borrower is the borrowed-response form of *transport.Transport: the
// response is valid only until the callback returns.
type borrower interface {
	PostFunc(ctx context.Context, schema string, body []byte, fn func(*http.Response) error) error
}

// call posts body to schema through the invoker and decodes the answer into
// v. With an invoker that lends its responses (transport.Transport's
// PostFunc) it decodes inside the callback, as a gateway that can use
// the borrowed form does; the answer is the same either way.
func (x *execution) call(ctx context.Context, schema string, body []byte, v any) error {
	x.calls.Add(1)
	if b, ok := x.g.inv.(borrower); ok {
		return b.PostFunc(ctx, schema, body, func(resp *http.Response) error {
			return decodeAnswer(schema, resp, v)
		})
	}
	resp, err := x.g.inv.Post(ctx, schema, body)
	if err != nil {
		return err // it names the schema
	}
	defer resp.Body.Close()
	return decodeAnswer(schema, resp, v)
}

// decodeAnswer reads resp's body and decodes it into v; the strings of v
// are copies, so neither the buffer nor the body need outlive it.
func decodeAnswer(schema string, resp *http.Response, v any) error {
	buf := getBuffer()
	defer putBuffer(buf)
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return fmt.Errorf("source schema %q: reading the answer: %w", schema, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("source schema %q: status %d: %s", schema, resp.StatusCode, excerpt(buf.Bytes()))
	}
	// Unmarshal copies every string out of buf, so buf can be reused.
	if err := json.Unmarshal(buf.Bytes(), v); err != nil {
		return fmt.Errorf("source schema %q: decoding the answer: %w", schema, err)
	}
	return nil
}

// excerpt returns the start of a body for an error message.
func excerpt(b []byte) string {
	const n = 200
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// Buffers for source schema answers and the gateway's answer, which reach
// tens of kilobytes: reusing them keeps the gateway's own garbage from
// drowning the transport's in the allocation figures.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func getBuffer() *bytes.Buffer {
	b := buffers.Get().(*bytes.Buffer)
	b.Reset()
	return b
}

func putBuffer(b *bytes.Buffer) {
	if b.Cap() <= 1<<20 {
		buffers.Put(b)
	}
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	body, _ := json.Marshal(struct {
		Errors []graphqlError `json:"errors"`
	}{[]graphqlError{{Message: msg}}})
	writeJSON(w, status, body)
}
