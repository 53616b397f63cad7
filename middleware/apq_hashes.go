package middleware

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"sync"
	"sync/atomic"
)

// DefaultQueryHashesMaxBytes is NewQueryHashes's default bound: 8 MiB of
// query texts.
const DefaultQueryHashesMaxBytes = 8 << 20

// QueryHashes keeps the SHA-256 hashes of the query texts that
// PersistedQueries sends, so that a text is hashed once, not on every
// call: a call with a text seen before costs one map lookup on it. It is
// bounded by the bytes of the texts it keeps, in two generations: when
// the newer one holds half the bound, it becomes the older, and the
// older is dropped; a text found in the older moves to the newer. So
// the texts in use stay, and at most the bound is kept. Safe for
// concurrent use; the transport shares one among its source schemas (a
// text's hash is the same for every schema).
type QueryHashes struct {
	half int // immutable: the bytes a generation holds before it turns over

	mu       sync.RWMutex
	cur, old map[string]*queryHash // guarded by mu; keyed by the text as a JSON string, quotes included
	curBytes int                   // guarded by mu: the bytes of cur's keys and values
	computed atomic.Int64          // hashes computed, for tests (export_test.go)
}

// NewQueryHashes returns an empty QueryHashes that keeps at most maxBytes
// of texts (with their hashes); zero or negative:
// DefaultQueryHashesMaxBytes. A text longer than half of it is hashed on
// every call and not kept.
func NewQueryHashes(maxBytes int) *QueryHashes {
	if maxBytes <= 0 {
		maxBytes = DefaultQueryHashesMaxBytes
	}
	return &QueryHashes{half: maxBytes / 2, cur: map[string]*queryHash{}}
}

// queryHash is the hash of one query text and the bytes that
// PersistedQueries sends for it, made once; never written after.
type queryHash struct {
	key string // the text as a JSON string, quotes included: the map key
	// member is the persistedQuery extension as a member of a request
	// object: "extensions":{"persistedQuery":{"version":1,"sha256Hash":"…"}}.
	member []byte
	// getExtensions is the extensions object escaped for a URL's query
	// string.
	getExtensions string
}

// The parts of queryHash.member around the hex digest.
const (
	hashMemberHead = `"extensions":{"persistedQuery":{"version":1,"sha256Hash":"`
	hashMemberTail = `"}}`
	// hashMemberLen is the length of every member: a "query" member no
	// longer than it is sent as it is, since the hash would not shorten
	// the request.
	hashMemberLen = len(hashMemberHead) + 2*sha256.Size + len(hashMemberTail)
)

// PersistedQueryMinBody is the length of the shortest body that
// PersistedQueries sends by its hash: braces around a "query" member
// longer than the persistedQuery extension that replaces it. A shorter
// body goes as it is.
const PersistedQueryMinBody = hashMemberLen + 3

// persistedQuery is h's extension as a member of an extensions object:
// "persistedQuery":{"version":1,"sha256Hash":"…"}.
func (h *queryHash) persistedQuery() []byte {
	return h.member[len(`"extensions":{`) : len(h.member)-1]
}

// of returns the hash of text, a query text as a JSON string with its
// quotes, from memory if it is there; nil if text is no valid JSON
// string.
func (q *QueryHashes) of(text []byte) *queryHash {
	q.mu.RLock()
	h := q.cur[string(text)]
	q.mu.RUnlock()
	if h != nil {
		return h
	}
	q.mu.Lock()
	if h = q.cur[string(text)]; h == nil {
		if h = q.old[string(text)]; h != nil {
			q.keep(h)
		}
	}
	q.mu.Unlock()
	if h != nil {
		return h
	}
	if h = newQueryHash(text); h == nil {
		return nil
	}
	q.computed.Add(1)
	if h.cost() <= q.half {
		q.mu.Lock()
		if q.cur[h.key] == nil {
			q.keep(h)
		}
		q.mu.Unlock()
	}
	return h
}

// keep puts h in the newer generation, turning it over first when h
// would fill it past the bound. Called with mu held.
func (q *QueryHashes) keep(h *queryHash) {
	if q.curBytes+h.cost() > q.half {
		q.old, q.cur, q.curBytes = q.cur, make(map[string]*queryHash, len(q.cur)), 0
	}
	q.cur[h.key] = h
	q.curBytes += h.cost()
}

// cost is what h holds in memory, roughly: its text (the key; the decoded
// text is not kept) and its extension's bytes.
func (h *queryHash) cost() int { return len(h.key) + len(h.member) + len(h.getExtensions) }

// newQueryHash hashes text, a JSON string: SHA-256 of the text it holds,
// as a server that decodes the request hashes it; nil if text is no valid
// JSON string (a broken body, sent as it is).
func newQueryHash(text []byte) *queryHash {
	var s string
	if json.Unmarshal(text, &s) != nil {
		return nil
	}
	sum := sha256.Sum256([]byte(s))
	digest := hex.EncodeToString(sum[:])
	member := hashMemberHead + digest + hashMemberTail
	return &queryHash{
		key:           string(text),
		member:        []byte(member),
		getExtensions: url.QueryEscape(member[len(`"extensions":`):]),
	}
}
