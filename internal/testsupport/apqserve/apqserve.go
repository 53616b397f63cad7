// Package apqserve puts automatic persisted queries (APQ) in front of a
// GraphQL-over-HTTP handler, as a source schema serves them (Apollo
// Server, gqlgen's extension.AutomaticPersistedQuery, Hot Chocolate): a
// request with extensions.persistedQuery {version: 1, sha256Hash} and no
// query runs the text kept under that hash, or is answered
// PersistedQueryNotFound; one with both has its hash checked and its text
// kept. The inner handler gets the request as the client would have sent
// it without persisted queries: the query in place of the extension, the
// extension taken out, so that a handler that knows nothing of them (or
// replays answers by request body, byte for byte) serves it unchanged.
//
// The root's wire tests, the embedded source schemas of the command and
// their replay serve APQ with it. Test support only: no library package
// imports it.
package apqserve

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/fusiongo/transport/internal/jsonscan"
)

// Mode is how a Handler treats a request with a persistedQuery.
type Mode int

const (
	// On serves persisted queries.
	On Mode = iota
	// NotSupported answers every such request PersistedQueryNotSupported,
	// as Apollo Server does with persisted queries turned off.
	NotSupported
	// Off passes every request to the inner handler as it is, as a server
	// that knows nothing of persisted queries: a request without a query
	// gets the inner handler's answer to that.
	Off
)

// DefaultMaxHashes is Options.MaxHashes's default.
const DefaultMaxHashes = 1000

// Options configure a Handler.
type Options struct {
	Mode Mode
	// MaxHashes bounds the texts kept; past it the oldest is forgotten
	// (gqlgen keeps them in an LRU cache). Zero: DefaultMaxHashes.
	MaxHashes int
}

// Stats count what a Handler did with the requests it got.
type Stats struct {
	ByHash     int // requests with a hash alone that ran a kept text
	NotFound   int // requests with a hash alone answered PersistedQueryNotFound
	Registered int // requests with text and hash, whose text was kept
	Refused    int // requests answered PersistedQueryNotSupported, or with a wrong hash
	Plain      int // requests without a persistedQuery, or any request when Off
}

// Handler serves persisted queries in front of an inner handler. Safe for
// concurrent use.
type Handler struct {
	inner http.Handler
	max   int // immutable

	mu     sync.Mutex
	mode   Mode              // guarded by mu
	texts  map[string][]byte // guarded by mu: hash -> the query text as a JSON string, as the client sent it
	order  []string          // guarded by mu: the hashes kept, oldest first
	counts Stats             // guarded by mu
}

// New returns a Handler in front of inner.
func New(inner http.Handler, o Options) *Handler {
	if o.MaxHashes <= 0 {
		o.MaxHashes = DefaultMaxHashes
	}
	return &Handler{inner: inner, max: o.MaxHashes, mode: o.Mode, texts: map[string][]byte{}}
}

// SetMode changes the mode for the requests to come.
func (h *Handler) SetMode(m Mode) {
	h.mu.Lock()
	h.mode = m
	h.mu.Unlock()
}

// Forget forgets every text kept, as a restarted server would.
func (h *Handler) Forget() {
	h.mu.Lock()
	clear(h.texts)
	h.order = nil
	h.mu.Unlock()
}

// StatsOf returns the counts of each handler of handlers by its name,
// nil if there is none (servers without persisted queries).
func StatsOf(handlers map[string]*Handler) map[string]Stats {
	if len(handlers) == 0 {
		return nil
	}
	out := make(map[string]Stats, len(handlers))
	for name, h := range handlers {
		out[name] = h.Stats()
	}
	return out
}

// Stats returns the counts so far.
func (h *Handler) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts
}

// request is a GraphQL request's members as apqserve reads them, without
// decoding its values: a request by hash costs the server about what one
// with its text does, as it would a real server (a map lookup), so that a
// client's figures are not the server's.
type request struct {
	members [maxMembers][2][]byte // key (quoted) and value of each member, in order
	n       int                   // members used
	query   []byte                // the query's value; nil if absent
	hash    []byte                // the persistedQuery's sha256Hash, unquoted; nil if none
	version []byte                // its version, as written
	ext     int                   // index of the extensions member in members; -1 if none
}

// maxMembers bounds the members of a request read: a request with more
// goes to the inner handler as it is.
const maxMembers = 8

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	mode := h.mode
	h.mu.Unlock()
	if mode == Off {
		h.count(func(s *Stats) { s.Plain++ })
		h.inner.ServeHTTP(w, r)
		return
	}
	switch r.Method {
	case http.MethodPost:
		h.servePost(w, r, mode)
	case http.MethodGet:
		h.serveGet(w, r, mode)
	default:
		h.inner.ServeHTTP(w, r)
	}
}

func (h *Handler) servePost(w http.ResponseWriter, r *http.Request, mode Mode) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if !bytes.Contains(body, []byte("persistedQuery")) {
		// Most requests: no extension to read.
		h.count(func(s *Stats) { s.Plain++ })
		h.forward(w, r, body)
		return
	}
	req, ok := readRequest(body)
	if !ok || req.hash == nil {
		h.count(func(s *Stats) { s.Plain++ })
		h.forward(w, r, body)
		return
	}
	query, ok := h.resolve(w, &req, mode)
	if !ok {
		return
	}
	h.forward(w, r, req.plain(query))
}

// resolve returns the query text of req, a request with a persistedQuery,
// or answers it itself (a refusal) and returns false.
func (h *Handler) resolve(w http.ResponseWriter, req *request, mode Mode) ([]byte, bool) {
	switch {
	case mode == NotSupported:
		h.count(func(s *Stats) { s.Refused++ })
		refuse(w, http.StatusOK, "PersistedQueryNotSupported", "PERSISTED_QUERY_NOT_SUPPORTED")
		return nil, false
	case string(req.version) != "1":
		h.count(func(s *Stats) { s.Refused++ })
		refuse(w, http.StatusBadRequest, "Unsupported persisted query version", "PERSISTED_QUERY_VERSION")
		return nil, false
	case req.query == nil:
		return h.lookup(w, req.hash)
	}
	var text string
	if json.Unmarshal(req.query, &text) != nil {
		refuse(w, http.StatusBadRequest, "the query must be a string", "BAD_REQUEST")
		return nil, false
	}
	if sum := sha256.Sum256([]byte(text)); hex.EncodeToString(sum[:]) != string(req.hash) {
		h.count(func(s *Stats) { s.Refused++ })
		refuse(w, http.StatusBadRequest, "provided sha does not match query", "INTERNAL_SERVER_ERROR")
		return nil, false
	}
	h.keep(req.hash, req.query)
	return req.query, true
}

// lookup returns the text kept under hash, or answers
// PersistedQueryNotFound.
func (h *Handler) lookup(w http.ResponseWriter, hash []byte) ([]byte, bool) {
	h.mu.Lock()
	text, ok := h.texts[string(hash)]
	if ok {
		h.counts.ByHash++
	} else {
		h.counts.NotFound++
	}
	h.mu.Unlock()
	if !ok {
		refuse(w, http.StatusOK, "PersistedQueryNotFound", "PERSISTED_QUERY_NOT_FOUND")
	}
	return text, ok
}

// keep keeps text under hash, forgetting the oldest past the bound.
func (h *Handler) keep(hash, text []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.counts.Registered++
	if _, ok := h.texts[string(hash)]; ok {
		return
	}
	if len(h.order) == h.max {
		delete(h.texts, h.order[0])
		h.order = h.order[1:]
	}
	h.texts[string(hash)] = bytes.Clone(text)
	h.order = append(h.order, string(hash))
}

func (h *Handler) count(f func(*Stats)) {
	h.mu.Lock()
	f(&h.counts)
	h.mu.Unlock()
}

// refuse answers a request error as Apollo Server and gqlgen do: errors
// with the code in extensions, and data null.
func refuse(w http.ResponseWriter, status int, message, code string) {
	b, _ := json.Marshal(map[string]any{
		"errors": []any{map[string]any{"message": message, "extensions": map[string]any{"code": code}}},
		"data":   nil,
	})
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b)
}

// forward passes r to the inner handler with body as its body (r is the
// server's, made for this handler: its body is the handler's to replace).
func (h *Handler) forward(w http.ResponseWriter, r *http.Request, body []byte) {
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	h.inner.ServeHTTP(w, r)
}

// readRequest reads a JSON request object, by its frame (the inner
// handler finds what is broken inside it); ok is false for anything else,
// and for one of more than maxMembers members.
func readRequest(body []byte) (req request, ok bool) {
	req.ext = -1
	ok = jsonscan.Members(body, func(key, value []byte) bool {
		if req.n == maxMembers {
			return false
		}
		switch string(key) {
		case `"query"`:
			req.query = value
		case `"extensions"`:
			req.ext = req.n
			if value[0] == '{' {
				req.readExtensions(value)
			}
		}
		req.members[req.n] = [2][]byte{key, value}
		req.n++
		return true
	})
	return req, ok
}

// readExtensions reads the persistedQuery of an extensions object: its
// sha256Hash (a string without escapes, as hex digests are
// written) and its version, as written.
func (req *request) readExtensions(value []byte) {
	jsonscan.Members(value, func(key, pq []byte) bool {
		if string(key) != `"persistedQuery"` {
			return true
		}
		jsonscan.Members(pq, func(k, v []byte) bool {
			switch string(k) {
			case `"sha256Hash"`:
				if v[0] == '"' && bytes.IndexByte(v, '\\') < 0 {
					req.hash = v[1 : len(v)-1]
				}
			case `"version"`:
				req.version = v
			}
			return true
		})
		return false
	})
}

// plain is req as a request without persisted queries, query as its
// query: the extension taken out (the extensions member with it, if it
// had nothing else), and the query where the extension stood if the
// request had none.
func (req *request) plain(query []byte) []byte {
	out := make([]byte, 0, 2*len(query)+len(`"query":`))
	out = append(out, '{')
	n := 0
	member := func(key, value []byte) {
		if n > 0 {
			out = append(out, ',')
		}
		n++
		out = append(append(append(out, key...), ':'), value...)
	}
	for i, m := range req.members[:req.n] {
		if i != req.ext {
			member(m[0], m[1])
			continue
		}
		if req.query == nil {
			member([]byte(`"query"`), query)
		}
		if rest := withoutPersistedQuery(m[1]); rest != nil {
			member(m[0], rest)
		}
	}
	return append(out, '}')
}

// withoutPersistedQuery returns ext, an extensions object, without its
// persistedQuery member, or nil if it had no other.
func withoutPersistedQuery(ext []byte) []byte {
	var kept []string
	jsonscan.Members(ext, func(key, value []byte) bool {
		if string(key) != `"persistedQuery"` {
			kept = append(kept, string(key)+":"+string(value))
		}
		return true
	})
	if len(kept) == 0 {
		return nil
	}
	return []byte("{" + strings.Join(kept, ",") + "}")
}

func (h *Handler) serveGet(w http.ResponseWriter, r *http.Request, mode Mode) {
	params := r.URL.Query()
	ext := params.Get("extensions")
	var req request
	if ext != "" && json.Valid([]byte(ext)) {
		req.readExtensions([]byte(ext))
	}
	if req.hash == nil {
		h.count(func(s *Stats) { s.Plain++ })
		h.inner.ServeHTTP(w, r)
		return
	}
	if q, ok := params["query"]; ok {
		req.query, _ = json.Marshal(q[0])
	}
	query, ok := h.resolve(w, &req, mode)
	if !ok {
		return
	}
	var text string
	json.Unmarshal(query, &text)
	params.Set("query", text)
	if rest := withoutPersistedQuery([]byte(ext)); rest != nil {
		params.Set("extensions", string(rest))
	} else {
		params.Del("extensions")
	}
	r2 := r.Clone(r.Context())
	r2.URL.RawQuery = params.Encode()
	h.inner.ServeHTTP(w, r2)
}
