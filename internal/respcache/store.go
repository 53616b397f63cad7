// Package respcache is the response cache of the request path: which
// source schema answers may be stored and for how long (RFC 9111 as a
// shared cache reads it, policy.go), the entries (entry.go), and the
// stores that hold them: in memory (memory.go, bounded, per schema) or on
// Redis (redis.go, shared by a fleet). The stage that uses them sits in
// the request path between SchemaOptions.Middleware and dedupe
// (stage.go).
//
// Who may share an entry is package sharekey's rule, the one dedupe keys
// by: a key covers everything the source schema would receive.
package respcache

import (
	"context"
	"net/http"
	"time"

	"github.com/fusiongo/transport/internal/sharekey"
)

// Key names one entry in a schema's store: sharekey's key of the request
// (the identity scope) or of its shared part (the shared scope).
type Key = sharekey.Key

// Seq is a store's invalidation sequence: it grows by one with each
// invalidation. A lookup reports the sequence it saw; a Set given that
// sequence stores nothing if an invalidation that covers the entry (its
// schema, or one of its tags) came after it. So an answer whose request
// started before an invalidation is never stored after it.
type Seq uint64

// Entry is one stored answer. Immutable once stored: the memory store
// hands the same *Entry to every hit, so a hit copies what it gives a
// caller (Header, Body) or gives it read-only.
type Entry struct {
	Status int         // the answer's status (200)
	Header http.Header // the answer's headers, deep-copied from the response (its strings may be borrowed memory)
	Body   []byte      // the whole body, as received

	// Date is when the answer was received; InitialAge its age then (the
	// Age header it arrived with). Its age at time t is InitialAge +
	// t.Sub(Date), the Age header a hit carries.
	Date       time.Time
	InitialAge time.Duration
	// Lifetime is the freshness lifetime: s-maxage, else max-age, else
	// response_cache.default_ttl, capped by response_cache.max_ttl. The
	// entry is fresh while its age is below it.
	Lifetime time.Duration
	// StaleWhileRevalidate and StaleIfError are the answer's own
	// Cache-Control extensions (RFC 5861), zero if absent: how long past
	// its lifetime the entry may still answer.
	StaleWhileRevalidate, StaleIfError time.Duration

	// Tags are the answer's cache tags (Cache-Tag, Surrogate-Key,
	// extensions.apolloCacheTags), for InvalidateCache.
	Tags []string
	// Shared: the entry is in the shared scope (public or s-maxage, with
	// response_cache.shared on), keyed by VaryNames' values; otherwise in
	// the identity scope, keyed by the whole request.
	Shared bool
	// VaryNames are the request headers a shared entry is keyed by, in
	// canonical form, sorted: the answer's Vary and response_cache.vary.
	VaryNames []string
}

// BodyOrNil returns e's body, nil for a nil e.
func (e *Entry) BodyOrNil() []byte {
	if e == nil {
		return nil
	}
	return e.Body
}

// Age returns e's age at now.
func (e *Entry) Age(now time.Time) time.Duration {
	return e.InitialAge + max(0, now.Sub(e.Date))
}

// Fresh reports whether e is within its lifetime at now.
func (e *Entry) Fresh(now time.Time) bool { return e.Age(now) < e.Lifetime }

// Size is what e weighs in a memory store's byte budget: its body, its
// headers and tags, and a fixed overhead.
func (e *Entry) Size() int {
	n := 256 + len(e.Body)
	for k, vs := range e.Header {
		n += len(k) + 16
		for _, v := range vs {
			n += len(v) + 16
		}
	}
	for _, t := range e.Tags {
		n += len(t) + 16
	}
	for _, v := range e.VaryNames {
		n += len(v) + 16
	}
	return n
}

// Store holds one source schema's entries (the memory store), or one
// schema's part of a shared store (Redis: the schema's name is in every key
// it writes). Safe for concurrent use.
//
// A Store never fails a call: the stage treats every error as a miss, or
// as a store that did not happen, and bounds each call by its context.
type Store interface {
	// Lookup finds the entries stored under keys, in order, writing each
	// into found[i] (nil: none, or expired), and returns the store's
	// invalidation sequence as of the lookup. found has len(keys) entries;
	// the caller owns it (so a lookup need not allocate).
	Lookup(ctx context.Context, keys []Key, found []*Entry) (Seq, error)

	// Set stores e under k for ttl (how long the store keeps it: its
	// lifetime left, and any stale window), tagged with e.Tags, unless an
	// invalidation of the schema or of one of e.Tags came after seq;
	// stored reports which. e must not be modified after.
	Set(ctx context.Context, k Key, e *Entry, ttl time.Duration, seq Seq) (stored bool, err error)

	// Invalidate removes every entry of the schema (no tags), or those
	// tagged with any of tags, and returns how many it removed. It moves
	// the invalidation sequence on before removing, so that a Set that
	// began before it and ends after it stores nothing.
	Invalidate(ctx context.Context, tags []string) (removed int, err error)

	// Stats reports the entries and bytes the store holds for the
	// schema; ok is false when the store cannot tell cheaply (Redis).
	Stats() (entries, bytes int64, ok bool)

	// Close lets go of the store's memory (memory) or does nothing (the
	// Redis client is the transport's, closed by it).
	Close() error
}
