package respcache

import (
	"context"
	"sync/atomic"
)

// EventKind is what happened to one call, or one answer, in a cache.
type EventKind uint8

// The kinds of Event.
const (
	// Hit: the call was answered from the cache, unsent.
	Hit EventKind = iota + 1
	// Miss: the call was looked up and not found fresh: it is sent.
	Miss
	// Bypass: the call is sent without a lookup (Reason: why: a request
	// that asked for no-store or no-cache, or could not be keyed).
	Bypass
	// Stored: an answer was stored.
	Stored
	// NotStored: an answer was not stored (Reason: why: the answer's
	// Cache-Control, status, errors, size, an invalidation after its
	// request began).
	NotStored
	// StoreError: the store failed a lookup (then a miss) or a write, or
	// a write was dropped (Reason: which; Err: the cause).
	StoreError
	// Stale: the call was answered from an entry past its lifetime
	// (Reason: "stale-while-revalidate", while one background request
	// refreshes it; "stale-if-error", the source schema having failed
	// the call).
	Stale
	// Refreshed: a background refresh of a stale entry ended (Reason:
	// "" when it got an answer, else "failed").
	Refreshed
	// ShadowCompared: in shadow mode, a fresh entry was compared with the
	// fresh answer (Reason: "equal", or the kind of the first difference:
	// "status", "body").
	ShadowCompared
)

var kindNames = [...]string{Hit: "hit", Miss: "miss", Bypass: "bypass", Stored: "stored", NotStored: "not_stored", StoreError: "store_error",
	Stale: "stale", Refreshed: "refreshed", ShadowCompared: "shadow_compared"}

// String is the kind's name in telemetry: hit, miss, bypass, stored,
// not_stored, store_error, stale, refreshed, shadow_compared.
func (k EventKind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "unknown"
}

// Event is one event of a cache.
type Event struct {
	Kind   EventKind
	Reason string // a short fixed label; "" for Hit, Miss and Stored
	Err    error  // StoreError's cause; nil otherwise
}

// Observer receives a cache's events, on the goroutine of the call (or of
// the write) they are about: it must be quick.
type Observer func(ctx context.Context, schema string, ev Event)

// Counts are a cache's counters since it was built.
type Counts struct {
	hits, misses, bypasses, stored, notStored, errors, stale, refreshes atomic.Int64
	shadowEqual, shadowDiffer                                           atomic.Int64
}

// CountsSnapshot is Counts read at one time.
type CountsSnapshot struct {
	Hits, Misses, Bypasses, Stored, NotStored, StoreErrors int64
	// Stale counts the calls answered from a stale entry (both reasons);
	// Refreshes the background refreshes that ended.
	Stale, Refreshes int64
	// ShadowEqual and ShadowDiffer count the shadow comparisons (shadow
	// mode) that found the entry equal to the fresh answer, and apart.
	ShadowEqual, ShadowDiffer int64
}

func (c *Counts) snapshot() CountsSnapshot {
	return CountsSnapshot{c.hits.Load(), c.misses.Load(), c.bypasses.Load(), c.stored.Load(), c.notStored.Load(), c.errors.Load(),
		c.stale.Load(), c.refreshes.Load(), c.shadowEqual.Load(), c.shadowDiffer.Load()}
}

// event counts ev and hands it to the observer.
func (c *Cache) event(ctx context.Context, ev Event) {
	switch ev.Kind {
	case Hit:
		c.counts.hits.Add(1)
	case Miss:
		c.counts.misses.Add(1)
	case Bypass:
		c.counts.bypasses.Add(1)
	case Stored:
		c.counts.stored.Add(1)
	case NotStored:
		c.counts.notStored.Add(1)
	case StoreError:
		c.counts.errors.Add(1)
	case Stale:
		c.counts.stale.Add(1)
	case Refreshed:
		c.counts.refreshes.Add(1)
	case ShadowCompared:
		if ev.Reason == "equal" {
			c.counts.shadowEqual.Add(1)
		} else {
			c.counts.shadowDiffer.Add(1)
		}
	}
	if c.observe != nil {
		c.observe(ctx, c.schema, ev)
	}
}

// Event records ev, an event of the stage's (Hit, Miss, Bypass,
// NotStored).
func (c *Cache) Event(ctx context.Context, ev Event) { c.event(ctx, ev) }
