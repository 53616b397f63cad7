package transport

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/fusiongo/transport/fault"
)

// maxInvalidationBody bounds the body of an invalidation request.
const maxInvalidationBody = 64 << 10

// invalidation is one item of an invalidation request: a source schema's
// entries, all of them or those of any of Tags.
type invalidation struct {
	SourceSchema string   `json:"source_schema"`
	Tags         []string `json:"tags,omitempty"`
}

// invalidationResult is the answer to an invalidation request: how many
// entries each item removed, in order, and in all.
type invalidationResult struct {
	Removed int   `json:"removed"`
	Items   []int `json:"items"`
}

// CacheInvalidationHandler returns an http.Handler that invalidates
// response cache entries, for a gateway to mount (on an internal
// listener, ideally). It refuses every request unless the configuration
// in force sets response_cache.invalidation_token, and every request
// whose Authorization is not "Bearer <that token>" (compared in constant
// time): 403 without a token configured, 401 with a wrong or missing one.
//
// A request is a POST whose JSON body is one item or an array of items:
//
//	{"source_schema": "products"}                          every entry of products
//	{"source_schema": "products", "tags": ["product:1"]}   those tagged with any of the tags
//
// and the answer, 200, says how many entries each item removed and in all:
// {"removed": 3, "items": [3]}. Each item is InvalidateCache's (on a Redis
// store every replica's entries, on the memory store this replica's). An
// unknown schema or one without a cache is 404, a malformed body 400, a
// store that fails 502; each with {"error": "..."}, and the items before
// the failing one are done.
func (inv *Transport) CacheInvalidationHandler() http.Handler {
	return http.HandlerFunc(inv.serveInvalidation)
}

func (inv *Transport) serveInvalidation(w http.ResponseWriter, r *http.Request) {
	st := inv.state.Load()
	if st == nil {
		invalidationError(w, http.StatusServiceUnavailable, fault.ErrClosed.Error())
		return
	}
	if st.invalidationToken == "" {
		invalidationError(w, http.StatusForbidden, "cache invalidation is off: response_cache.invalidation_token is not set")
		return
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(token), []byte(st.invalidationToken)) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="cache invalidation"`)
		invalidationError(w, http.StatusUnauthorized, "missing or wrong bearer token")
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		invalidationError(w, http.StatusMethodNotAllowed, "use POST")
		return
	}
	items, err := readInvalidations(r.Body)
	if err != nil {
		invalidationError(w, http.StatusBadRequest, err.Error())
		return
	}
	res := invalidationResult{Items: make([]int, 0, len(items))}
	for i, it := range items {
		n, err := inv.InvalidateCache(r.Context(), it.SourceSchema, it.Tags...)
		if err != nil {
			code := http.StatusBadGateway
			if errors.Is(err, fault.ErrUnknownSchema) || errors.Is(err, fault.ErrNoCache) {
				code = http.StatusNotFound
			}
			invalidationError(w, code, fmt.Sprintf("item %d: %v (items before it were done: %d entries removed)", i, err, res.Removed))
			return
		}
		res.Removed += n
		res.Items = append(res.Items, n)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(res)
}

// readInvalidations decodes an invalidation request's body: one item or an
// array of them, each with a source schema.
func readInvalidations(body io.Reader) ([]invalidation, error) {
	b, err := io.ReadAll(io.LimitReader(body, maxInvalidationBody+1))
	if err != nil {
		return nil, fmt.Errorf("reading the body: %w", err)
	}
	if len(b) > maxInvalidationBody {
		return nil, fmt.Errorf("body over %d bytes", maxInvalidationBody)
	}
	var items []invalidation
	trimmed := strings.TrimSpace(string(b))
	dec := json.NewDecoder(strings.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if strings.HasPrefix(trimmed, "[") {
		err = dec.Decode(&items)
	} else {
		var one invalidation
		err = dec.Decode(&one)
		items = []invalidation{one}
	}
	if err != nil {
		return nil, fmt.Errorf("body: want {\"source_schema\": name, \"tags\": [...]} or an array of them: %w", err)
	}
	if dec.More() {
		return nil, errors.New("body: one JSON value expected")
	}
	if len(items) == 0 {
		return nil, errors.New("body: no item")
	}
	for i, it := range items {
		if it.SourceSchema == "" {
			return nil, fmt.Errorf("item %d: source_schema missing", i)
		}
	}
	return items, nil
}

// invalidationError answers code with {"error": msg}.
func invalidationError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(struct {
		Error string `json:"error"`
	}{msg})
}
