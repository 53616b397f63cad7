package schemas

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	graphql "github.com/graph-gophers/graphql-go"
	gqlerrors "github.com/graph-gophers/graphql-go/errors"
)

const (
	// mediaJSON is the default response media type.
	mediaJSON = "application/json"
	// mediaGraphQLResponse is answered when the Accept header names it
	// (GraphQL over HTTP). With it, a single request that fails before
	// execution (no data) gets 400, as that specification asks.
	mediaGraphQLResponse = "application/graphql-response+json"
	// maxBodyBytes bounds a request body; larger ones get 413.
	maxBodyBytes = 8 << 20
)

// handler serves one schema over HTTP.
type handler struct {
	schema  *graphql.Schema
	latency time.Duration
}

var _ http.Handler = (*handler)(nil)

// result is one GraphQL response. Data comes first, as most servers write it;
// without data (a request error) the key is absent.
type result struct {
	Data       json.RawMessage         `json:"data,omitempty"`
	Errors     []*gqlerrors.QueryError `json:"errors,omitempty"`
	Extensions map[string]any          `json:"extensions,omitempty"`
}

// params is one decoded GraphQL request. variables holds one map for a plain
// request and one per entry for a variable batch.
type params struct {
	query         string
	operationName string
	variables     []map[string]any
	variableBatch bool
}

// requestError is a malformed request: answered with 400 (or 413, 405) and a
// GraphQL error body.
type requestError struct {
	status  int
	message string
}

func (e *requestError) Error() string { return e.message }

func badRequest(msg string) *requestError {
	return &requestError{status: http.StatusBadRequest, message: msg}
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The body is read before the latency: net/http notices a client that
	// went away (and ends the request's context) only once the body is read.
	var (
		raw []byte
		err error
	)
	if r.Method == http.MethodPost {
		raw, err = readBody(w, r)
	}
	if !h.wait(r.Context()) {
		return
	}

	media := mediaJSON
	if strings.Contains(strings.Join(r.Header.Values("Accept"), ","), mediaGraphQLResponse) {
		media = mediaGraphQLResponse
	}
	ctx := withBearerToken(r.Context(), r.Header.Get("Authorization"))

	status := http.StatusOK
	var body []byte
	switch {
	case err != nil:
	case r.Method == http.MethodPost:
		body, status, err = h.post(ctx, raw, media)
	case r.Method == http.MethodGet:
		var p params
		if p, err = paramsFromQuery(r); err == nil {
			body, status = h.single(ctx, p, media)
		}
	default:
		w.Header().Set("Allow", "GET, POST")
		err = &requestError{status: http.StatusMethodNotAllowed, message: "method " + r.Method + " not allowed: use POST or GET"}
	}
	if err != nil {
		status = http.StatusBadRequest
		var re *requestError
		if errors.As(err, &re) {
			status = re.status
		}
		body = encodeResult(&result{Errors: []*gqlerrors.QueryError{{Message: err.Error()}}})
	}
	writeResponse(w, status, media, body)
}

// wait waits out the latency; false if ctx ended first.
func (h *handler) wait(ctx context.Context) bool {
	if h.latency <= 0 {
		return true
	}
	t := time.NewTimer(h.latency)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, &requestError{status: http.StatusRequestEntityTooLarge, message: "request body larger than " + strconv.Itoa(maxBodyBytes) + " bytes"}
		}
		return nil, badRequest("reading the request body: " + err.Error())
	}
	return raw, nil
}

// writeResponse writes a complete answer. Content-Length is always set, so
// that the framing does not depend on the size, and the automatic Date header
// is suppressed, so that the same request gives the same bytes.
func writeResponse(w http.ResponseWriter, status int, media string, body []byte) {
	hdr := w.Header()
	hdr.Set("Content-Type", media+"; charset=utf-8")
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	hdr["Date"] = nil
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// post answers a POST body: one request object or a batch (array) of them.
func (h *handler) post(ctx context.Context, raw []byte, media string) ([]byte, int, error) {
	var doc json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, 0, badRequest("the request body is not valid JSON: " + err.Error())
	}
	switch doc[0] {
	case '{':
		p, err := decodeParams(doc)
		if err != nil {
			return nil, 0, err
		}
		body, status := h.single(ctx, p, media)
		return body, status, nil
	case '[':
		var entries []json.RawMessage
		if err := json.Unmarshal(doc, &entries); err != nil {
			return nil, 0, badRequest("the request batch is not valid: " + err.Error())
		}
		if len(entries) == 0 {
			return nil, 0, badRequest("the request batch is empty")
		}
		parts := make([][]byte, len(entries))
		for i, e := range entries {
			p, err := decodeParams(e)
			if err != nil {
				// One malformed entry does not fail its neighbours.
				parts[i] = encodeResult(&result{Errors: []*gqlerrors.QueryError{{Message: err.Error()}}})
				continue
			}
			parts[i] = h.execute(ctx, p)
		}
		return joinArray(parts), http.StatusOK, nil
	default:
		return nil, 0, badRequest("the request body must be a JSON object or an array of objects")
	}
}

// single answers one request, a plain one or a variable batch.
func (h *handler) single(ctx context.Context, p params, media string) ([]byte, int) {
	if p.variableBatch {
		return h.execute(ctx, p), http.StatusOK
	}
	res := h.exec(ctx, p.query, p.operationName, p.variables[0])
	status := http.StatusOK
	if media == mediaGraphQLResponse && res.Data == nil {
		status = http.StatusBadRequest
	}
	return encodeResult(res), status
}

// execute runs p and encodes its answer: a result, or for a variable batch
// an array of results in the order of the variables.
func (h *handler) execute(ctx context.Context, p params) []byte {
	if !p.variableBatch {
		return encodeResult(h.exec(ctx, p.query, p.operationName, p.variables[0]))
	}
	parts := make([][]byte, len(p.variables))
	for i, vars := range p.variables {
		parts[i] = encodeResult(h.exec(ctx, p.query, p.operationName, vars))
	}
	return joinArray(parts)
}

func (h *handler) exec(ctx context.Context, query, operationName string, vars map[string]any) *result {
	resp := h.schema.Exec(ctx, query, operationName, vars)
	return &result{Data: resp.Data, Errors: resp.Errors, Extensions: resp.Extensions}
}

// decodeParams decodes one request object.
func decodeParams(raw json.RawMessage) (params, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return params{}, badRequest("a request must be a JSON object")
	}
	var fields struct {
		Query         json.RawMessage `json:"query"`
		OperationName json.RawMessage `json:"operationName"`
		Variables     json.RawMessage `json:"variables"`
	}
	if err := json.Unmarshal(raw, &fields); err != nil {
		return params{}, badRequest("the request is not valid: " + err.Error())
	}
	var p params
	if isNull(fields.Query) {
		return params{}, badRequest("the request has no query")
	}
	if err := json.Unmarshal(fields.Query, &p.query); err != nil {
		return params{}, badRequest("the query must be a string")
	}
	if !isNull(fields.OperationName) {
		if err := json.Unmarshal(fields.OperationName, &p.operationName); err != nil {
			return params{}, badRequest("the operationName must be a string or null")
		}
	}
	vars, batch, err := decodeVariables(fields.Variables)
	if err != nil {
		return params{}, err
	}
	p.variables, p.variableBatch = vars, batch
	return p, nil
}

// decodeVariables decodes absent or null variables, an object, or an array of
// objects (a variable batch).
func decodeVariables(raw json.RawMessage) ([]map[string]any, bool, error) {
	if isNull(raw) {
		return []map[string]any{nil}, false, nil
	}
	switch raw[0] {
	case '{':
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, false, badRequest("the variables are not valid: " + err.Error())
		}
		return []map[string]any{m}, false, nil
	case '[':
		var list []map[string]any
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, false, badRequest("the variables must be an object or an array of objects")
		}
		return list, true, nil
	default:
		return nil, false, badRequest("the variables must be an object or an array of objects")
	}
}

// paramsFromQuery decodes a GET request's query, operationName and variables
// (JSON) parameters.
func paramsFromQuery(r *http.Request) (params, error) {
	q := r.URL.Query()
	if !q.Has("query") {
		return params{}, badRequest("the request has no query")
	}
	p := params{query: q.Get("query"), operationName: q.Get("operationName")}
	vars, batch, err := decodeVariables(json.RawMessage(strings.TrimSpace(q.Get("variables"))))
	if err != nil {
		return params{}, err
	}
	p.variables, p.variableBatch = vars, batch
	return p, nil
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// encodeResult marshals r without HTML escaping, so that strings cross the
// wire as the resolvers produced them.
func encodeResult(r *result) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		// Only a resolver value that JSON cannot hold gets here.
		return []byte(`{"errors":[{"message":"encoding the response failed"}]}`)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func joinArray(parts [][]byte) []byte {
	return append(append([]byte{'['}, bytes.Join(parts, []byte{','})...), ']')
}

type bearerKey struct{}

// withBearerToken puts the token of an "Authorization: Bearer <token>" header
// into ctx; accounts' me resolves it.
func withBearerToken(ctx context.Context, authorization string) context.Context {
	scheme, token, ok := strings.Cut(strings.TrimSpace(authorization), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ctx
	}
	return context.WithValue(ctx, bearerKey{}, strings.TrimSpace(token))
}

func bearerToken(ctx context.Context) string {
	s, _ := ctx.Value(bearerKey{}).(string)
	return s
}
