package middleware

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"

	"github.com/fusiongo/transport/internal/defaults"
	"github.com/fusiongo/transport/internal/gqlhttp"
	"github.com/fusiongo/transport/operation"
)

// DefaultPersistedQueryMaxURLBytes is PersistedQueriesConfig.MaxURLBytes's
// default: 8 KiB.
const DefaultPersistedQueryMaxURLBytes = defaults.PersistedQueryMaxURLBytes

// The reasons PersistedQueries sends a request again with its query text
// (PersistedQueriesConfig.OnResend), and turns itself off
// (PersistedQueries.Off).
const (
	// PersistedQueryNotFound: the source schema does not know the hash
	// (PERSISTED_QUERY_NOT_FOUND): the request goes again with its text
	// and hash, and the schema keeps the text under the hash.
	PersistedQueryNotFound = "not_found"
	// PersistedQueryNotSupported: the source schema refuses persisted
	// queries (PERSISTED_QUERY_NOT_SUPPORTED): they are off for it, and
	// the request goes again with its text alone.
	PersistedQueryNotSupported = "not_supported"
	// PersistedQueryRequestError: the source schema answered the request
	// without its text with another request error (errors, no data, no
	// error at a path: nothing ran): the request goes again with its text
	// alone. If that answer is no request error, the schema cannot run a
	// request by its hash: persisted queries are off for it, with the
	// reason PersistedQueryUnknown.
	PersistedQueryRequestError = "request_error"
	// PersistedQueryUnknown is the reason persisted queries are off for a
	// source schema that failed a request by its hash and ran it by its
	// text: a schema without APQ.
	PersistedQueryUnknown = "no_apq"
)

// PersistedQueriesConfig configures NewPersistedQueries. It is copied:
// later changes to it have no effect.
type PersistedQueriesConfig struct {
	// Schema names the source schema in the log line that says persisted
	// queries are off.
	Schema string

	// GET sends a query (never a mutation or a subscription) as a GET
	// with its hash, operationName and variables in the URL, when the
	// URL is at most MaxURLBytes long, so that an HTTP cache between the
	// gateway and the schema can answer it. A longer one, and every other
	// request, goes by POST. Default: false.
	GET bool

	// MaxURLBytes bounds the URL of a query sent as GET, its scheme, host,
	// path and query string. Zero or negative:
	// DefaultPersistedQueryMaxURLBytes.
	MaxURLBytes int

	// Hashes keeps the hashes of the query texts sent; several
	// PersistedQueries may share one. Nil: one of their own, of
	// DefaultQueryHashesMaxBytes.
	Hashes *QueryHashes

	// Logger receives the one Warn record saying that persisted queries
	// are off for the schema. Default: slog.Default().
	Logger *slog.Logger

	// OnResend, if set, is called each time a request goes again with its
	// text, with the reason (PersistedQueryNotFound,
	// PersistedQueryNotSupported, PersistedQueryRequestError), on the
	// request's goroutine with its context, before it goes. It must not
	// block.
	OnResend func(ctx context.Context, reason string)
}

// PersistedQueries sends a source schema's GraphQL requests as automatic
// persisted queries (APQ): the SHA-256 hash of the query text in
// extensions.persistedQuery in place of the text, and the text only when
// the schema asks for it. It is the state of one schema, shared by its
// routes: once the schema shows it cannot serve persisted queries, they
// are off for it (Off) until a new PersistedQueries replaces this one (a
// reload). Safe for concurrent use.
type PersistedQueries struct {
	cfg PersistedQueriesConfig // immutable; defaults applied
	off atomic.Pointer[string] // nil while on; then the reason, set once

	byHash, notFound, notSupported, requestErrors atomic.Uint64 // atomic; see PersistedQueryCounts
}

// PersistedQueryCounts are what a PersistedQueries did since it was made.
type PersistedQueryCounts struct {
	ByHash        uint64 `json:"by_hash"`        // requests sent by their hash
	NotFound      uint64 `json:"not_found"`      // of them, refused as not found and sent again with text and hash
	NotSupported  uint64 `json:"not_supported"`  // refused as not supported and sent again with their text
	RequestErrors uint64 `json:"request_errors"` // answered another request error and sent again with their text
}

// Counts returns the counts so far.
func (p *PersistedQueries) Counts() PersistedQueryCounts {
	return PersistedQueryCounts{ByHash: p.byHash.Load(), NotFound: p.notFound.Load(), NotSupported: p.notSupported.Load(), RequestErrors: p.requestErrors.Load()}
}

// NewPersistedQueries returns persisted queries on, configured by cfg.
func NewPersistedQueries(cfg PersistedQueriesConfig) *PersistedQueries {
	if cfg.MaxURLBytes <= 0 {
		cfg.MaxURLBytes = DefaultPersistedQueryMaxURLBytes
	}
	if cfg.Hashes == nil {
		cfg.Hashes = NewQueryHashes(0)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &PersistedQueries{cfg: cfg}
}

// GET reports whether queries go as GET when they can
// (PersistedQueriesConfig.GET).
func (p *PersistedQueries) GET() bool { return p.cfg.GET }

// On reports whether requests still go by their hash.
func (p *PersistedQueries) On() bool { return p.off.Load() == nil }

// Off returns why persisted queries are off (PersistedQueryNotSupported
// or PersistedQueryUnknown), or "" while they are on.
func (p *PersistedQueries) Off() string {
	if r := p.off.Load(); r != nil {
		return *r
	}
	return ""
}

// turnOff turns persisted queries off for good, and says so once, with
// the context of the request that showed it.
func (p *PersistedQueries) turnOff(ctx context.Context, reason string) {
	if p.off.CompareAndSwap(nil, &reason) {
		p.cfg.Logger.WarnContext(ctx, "automatic persisted queries off for this source schema until a reload: it cannot run a request by its hash; requests go with their query text",
			"source_schema", p.cfg.Schema, "reason", reason)
	}
}

// resent counts a request sent again with its text.
func (p *PersistedQueries) resent(ctx context.Context, reason string) {
	switch reason {
	case PersistedQueryNotFound:
		p.notFound.Add(1)
	case PersistedQueryNotSupported:
		p.notSupported.Add(1)
	default:
		p.requestErrors.Add(1)
	}
	if p.cfg.OnResend != nil {
		p.cfg.OnResend(ctx, reason)
	}
}

// Middleware returns the middleware that sends each GraphQL request it
// can by its hash; see PersistedQueries.
//
// A request goes by its hash when it is a POST of one JSON request
// object whose members are "query" (a string longer than the extension
// that replaces it: a shorter one is sent as it is), and at most
// "operationName", "variables" and "extensions" (an object without a
// persistedQuery), with no Content-Encoding and no protocol upgrade. Its
// "query" member is replaced by the persistedQuery extension where it
// stands, so that the variables are neither decoded nor encoded again,
// nor validated: a body that is not valid JSON inside its members reaches
// the schema as broken as it was, which refuses it (a request error:
// the text goes, and is refused the same). Any other request, and every
// request once persisted queries are off, goes as it is.
//
// The answer to a request sent by its hash is read when it can be a
// refusal (a JSON answer of at most 4 KiB, status under 500), and:
//
//   - PERSISTED_QUERY_NOT_FOUND (extensions.code, or the message
//     PersistedQueryNotFound): the request goes again at once, by POST,
//     with its text and its hash;
//   - PERSISTED_QUERY_NOT_SUPPORTED (or PersistedQueryNotSupported):
//     persisted queries are off, and the request goes again with its
//     text;
//   - another request error (errors, no data or null data, and no error
//     at a path): the request goes again with its text; if that answer is
//     no request error, persisted queries are off (PersistedQueryUnknown).
//
// Each of these answers says that the operation did not run: the schema
// had no text to run, or refused the request before running it (by the
// GraphQL specification, an error raised before execution has no data,
// and an error raised in it is at a field's path). So a mutation is sent
// again only when it has not run. Any other answer goes to the caller.
//
// A request sent again goes through the middleware further in as a call
// of its own: it is not a retry, and spends no retry budget, but takes its
// turn of a rate limit and passes a circuit breaker, where its outcome
// counts, as the refused one's did.
func (p *PersistedQueries) Middleware() Middleware {
	return func(next http.RoundTripper) http.RoundTripper {
		return &persister{wrapped: wrap(next), p: p}
	}
}

// persister is the RoundTripper of PersistedQueries.Middleware.
type persister struct {
	wrapped
	p *PersistedQueries // immutable; shared by the schema's routes, safe for concurrent use
}

var _ http.RoundTripper = (*persister)(nil)

func (s *persister) RoundTrip(req *http.Request) (*http.Response, error) {
	if !s.p.On() || req.Method != http.MethodPost || req.Body == nil || req.Body == http.NoBody ||
		len(req.Header["Content-Encoding"]) > 0 || gqlhttp.AsksUpgrade(req) {
		return s.next.RoundTrip(req)
	}
	// The body, unread, but not its kind: a stage further in that asks
	// for it (Retry, Hedge) gets it from the rewritten body, which tells
	// it when first asked (persistedBody), as it would have asked the
	// caller's.
	c, err := bodyOf(req)
	if err != nil {
		return nil, err
	}
	if c.body == nil {
		return s.next.RoundTrip(c.req)
	}
	doc, ok := readRequest(c.body)
	var h *queryHash
	if ok {
		h = s.p.cfg.Hashes.of(doc.text)
	}
	if h == nil {
		return s.next.RoundTrip(c.req)
	}
	s.p.byHash.Add(1)
	resp, err := s.next.RoundTrip(s.byHash(c, doc, h))
	if err != nil {
		closeBody(c.req) // not sent
		return nil, err
	}
	v, resp := judge(resp)
	ctx := req.Context()
	switch v {
	case answered:
		closeBody(c.req)
		return resp, nil
	case notFound:
		drain(resp)
		closeBody(c.req)
		s.p.resent(ctx, PersistedQueryNotFound)
		return s.next.RoundTrip(newPersisted(c, spliceWithHash(c.body, doc, h)))
	case notSupported:
		drain(resp)
		s.p.turnOff(ctx, PersistedQueryNotSupported)
		s.p.resent(ctx, PersistedQueryNotSupported)
		return s.next.RoundTrip(c.req)
	}
	drain(resp)
	s.p.resent(ctx, PersistedQueryRequestError)
	return s.byText(ctx, c.req)
}

// byText sends req, a request whose hash alone got a request error, with
// its text, and turns persisted queries off if that answer is no request
// error: the schema ran by its text what it could not run by its hash.
func (s *persister) byText(ctx context.Context, req *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	v, resp := judge(resp)
	if v == answered {
		s.p.turnOff(ctx, PersistedQueryUnknown)
	}
	return resp, nil
}

// byHash returns the request that sends c by its hash h: a GET when
// PersistedQueriesConfig.GET allows it, else a POST.
func (s *persister) byHash(c classified, doc apqRequest, h *queryHash) *http.Request {
	if s.p.cfg.GET && kindOf(c.req, c.body) == operation.Query {
		if out := getRequest(c.req, doc, h, s.p.cfg.MaxURLBytes); out != nil {
			return out
		}
	}
	return newPersisted(c, spliceHashOnly(c.body, doc, h))
}
