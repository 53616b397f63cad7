package respcache

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fusiongo/transport/internal/sharekey"
)

// Cache is one source schema's response cache: its store, its policy, and
// what its stage has learned and counted. The schema's routes (a canary's
// two sides) share it, and a reload whose cache settings and URL are equal
// keeps it, entries and all. Safe for concurrent use.
type Cache struct {
	schema   string                     // immutable
	store    Store                      // immutable
	policy   Policy                     // immutable
	now      func() time.Time           // immutable
	observe  Observer                   // immutable; nil: none
	log      *slog.Logger               // immutable
	writes   chan struct{}              // immutable; nil: Set runs on the caller's goroutine (memory); else a slot per write in flight (Redis)
	closed   atomic.Bool                // Close was called: no more writes
	varies   atomic.Pointer[[]VaryList] // the vary lists of shared entries seen, newest first; replaced whole under variesMu
	variesMu sync.Mutex

	counts Counts // atomic counters, for the status page

	shadowMode bool      // immutable: response_cache.mode shadow (shadow.go)
	shadow     shadowLog // the recent shadow differences

	// The background refreshes of stale entries: one per key at a time,
	// each under bg (cancelled by Close, which waits for them).
	refreshTimeout time.Duration      // immutable: bounds each refresh
	bg             context.Context    // immutable
	stopBG         context.CancelFunc // immutable
	refreshing     sync.Map           // Key -> struct{}: a refresh in flight
	refreshMu      sync.Mutex         // orders refreshes.Add before Close's Wait
	stopped        bool               // Close has begun: no refresh or remote write starts; guarded by refreshMu
	refreshes      sync.WaitGroup     // the refreshes and remote writes in flight
}

// VaryList is the sorted request header names one shared entry was keyed
// by.
type VaryList []string

// maxVaryLists bounds the vary lists a cache remembers: a lookup keys the
// request once per list (all in one store round trip).
const maxVaryLists = 4

// maxWrites bounds the writes to a remote store in flight: past it, an
// answer is not stored (counted as a store error), so that a slow store
// never holds more than this many answers' memory.
const maxWrites = 64

// Config configures New.
type Config struct {
	Schema string // the source schema, for logs and events
	Store  Store  // the schema's store; Close closes it
	Policy Policy
	// Remote: the store is across the network (Redis): writes go off the
	// caller's goroutine, bounded (maxWrites). Otherwise a write runs on the
	// goroutine that read the answer's last byte.
	Remote bool
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// Observe is called with each event; nil: none.
	Observe Observer
	// Log receives a line when a write is dropped; nil: slog.Default.
	Log *slog.Logger
	// Shadow: look up and store, but send every call and answer it
	// fresh, comparing a fresh entry with the fresh answer (shadow.go).
	Shadow bool
	// RefreshTimeout bounds a background refresh of a stale entry (the
	// schema's request_timeout, else its header_timeout); 0: 100s.
	RefreshTimeout time.Duration
}

// New returns the cache of cfg.
func New(cfg Config) *Cache {
	c := &Cache{schema: cfg.Schema, store: cfg.Store, policy: cfg.Policy, now: cfg.Now, observe: cfg.Observe, log: cfg.Log, shadowMode: cfg.Shadow}
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if cfg.Remote {
		c.writes = make(chan struct{}, maxWrites)
	}
	c.varies.Store(new([]VaryList))
	c.refreshTimeout = cfg.RefreshTimeout
	if c.refreshTimeout <= 0 {
		c.refreshTimeout = 100 * time.Second
	}
	c.bg, c.stopBG = context.WithCancel(context.Background())
	return c
}

// Refresh runs f on a goroutine of its own, under a context that Close
// cancels and RefreshTimeout bounds, unless a refresh of k is in flight or
// the cache is closed: one refresh per key, whatever the number of
// callers. It reports whether f will run.
func (c *Cache) Refresh(k Key, f func(ctx context.Context)) bool {
	if _, busy := c.refreshing.LoadOrStore(k, struct{}{}); busy {
		return false
	}
	return c.startRefresh([]Key{k}, f)
}

// RefreshEach is Refresh for several keys at once (an _entities call's
// stale representations): it claims each of ks that no refresh holds and,
// if it claimed any, runs f with the indexes of those in ks, each key held
// until f returns. It reports whether f will run.
func (c *Cache) RefreshEach(ks []Key, f func(ctx context.Context, claimed []int)) bool {
	var claimed []int
	var held []Key
	for i, k := range ks {
		if _, busy := c.refreshing.LoadOrStore(k, struct{}{}); !busy {
			claimed = append(claimed, i)
			held = append(held, k)
		}
	}
	if len(held) == 0 {
		return false
	}
	return c.startRefresh(held, func(ctx context.Context) { f(ctx, claimed) })
}

// startRefresh runs f as Refresh does, ks claimed in refreshing by the
// caller and let go when f returns (or at once if the cache is closed).
func (c *Cache) startRefresh(ks []Key, f func(ctx context.Context)) bool {
	release := func() {
		for _, k := range ks {
			c.refreshing.Delete(k)
		}
	}
	c.refreshMu.Lock()
	if c.stopped {
		c.refreshMu.Unlock()
		release()
		return false
	}
	c.refreshes.Add(1)
	c.refreshMu.Unlock()
	go func() {
		defer c.refreshes.Done()
		defer release()
		ctx, cancel := context.WithTimeout(c.bg, c.refreshTimeout)
		defer cancel()
		f(ctx)
	}()
	return true
}

// Schema returns the source schema's name.
func (c *Cache) Schema() string { return c.schema }

// Policy returns the cache's policy.
func (c *Cache) Policy() Policy { return c.policy }

// Store returns the cache's store.
func (c *Cache) Store() Store { return c.store }

// Now returns the cache clock's time.
func (c *Cache) Now() time.Time { return c.now() }

// Varies returns the vary lists of shared entries seen, newest first. The
// caller must not modify them.
func (c *Cache) Varies() []VaryList { return *c.varies.Load() }

// learn remembers names, the vary list of a shared entry just stored.
func (c *Cache) learn(names []string) {
	for _, l := range c.Varies() {
		if slices.Equal(l, names) {
			return
		}
	}
	c.variesMu.Lock()
	defer c.variesMu.Unlock()
	old := *c.varies.Load()
	for _, l := range old {
		if slices.Equal(l, names) {
			return
		}
	}
	next := make([]VaryList, 0, maxVaryLists)
	next = append(next, slices.Clone(names))
	next = append(next, old[:min(len(old), maxVaryLists-1)]...)
	c.varies.Store(&next)
}

// Lookup looks keys up in the store; an error is a miss, counted.
func (c *Cache) Lookup(ctx context.Context, keys []Key, found []*Entry) Seq {
	seq, err := c.store.Lookup(ctx, keys, found)
	if err != nil {
		clear(found)
		c.event(ctx, Event{Kind: StoreError, Reason: "lookup", Err: err})
	}
	return seq
}

// Put stores e under k with ttl, unless an invalidation after seq covers
// it: at once on a memory store, off the caller's goroutine on a remote one
// (dropped, counted, when maxWrites are in flight).
func (c *Cache) Put(ctx context.Context, k Key, e *Entry, ttl time.Duration, seq Seq) {
	if c.closed.Load() {
		return
	}
	ctx = context.WithoutCancel(ctx)
	if c.writes == nil {
		c.put(ctx, k, e, ttl, seq)
		return
	}
	select {
	case c.writes <- struct{}{}:
	default:
		c.event(ctx, Event{Kind: StoreError, Reason: "writes-full"})
		return
	}
	c.refreshMu.Lock()
	if c.stopped {
		c.refreshMu.Unlock()
		<-c.writes
		return
	}
	c.refreshes.Add(1) // Close waits for writes as for refreshes
	c.refreshMu.Unlock()
	go func() {
		defer c.refreshes.Done()
		defer func() { <-c.writes }()
		c.put(ctx, k, e, ttl, seq)
	}()
}

func (c *Cache) put(ctx context.Context, k Key, e *Entry, ttl time.Duration, seq Seq) {
	stored, err := c.store.Set(ctx, k, e, ttl, seq)
	switch {
	case err != nil:
		c.event(ctx, Event{Kind: StoreError, Reason: "set", Err: err})
	case !stored:
		c.event(ctx, Event{Kind: NotStored, Reason: "invalidated"})
	default:
		if e.Shared {
			c.learn(e.VaryNames)
		}
		c.event(ctx, Event{Kind: Stored})
	}
}

// Healther is a Store that can tell whether it is asked: a remote store
// that pauses after repeated failures.
type Healther interface {
	// Health returns "ok", or why the store is not asked now.
	Health() string
}

// Health returns the store's health: "ok" for a store that cannot fail
// (memory), else what the store says (Healther).
func (c *Cache) Health() string {
	if h, ok := c.store.(Healther); ok {
		return h.Health()
	}
	return "ok"
}

// Invalidate removes the schema's entries, or those tagged with any of
// tags.
func (c *Cache) Invalidate(ctx context.Context, tags []string) (int, error) {
	return c.store.Invalidate(ctx, tags)
}

// Close drops the cache's entries from a memory store (a remote store's
// outlive it) and stops its writes.
func (c *Cache) Close() error {
	c.closed.Store(true)
	c.refreshMu.Lock()
	c.stopped = true
	c.refreshMu.Unlock()
	c.stopBG()
	c.refreshes.Wait()
	return c.store.Close()
}

// Counts returns the cache's counters.
func (c *Cache) Counts() CountsSnapshot { return c.counts.snapshot() }

// WithoutCache marks ctx so that no stage answers from a cache or stores into
// one: the compare harness and shadow copies, whose both sides must really
// be sent.
func WithoutCache(ctx context.Context) context.Context {
	return context.WithValue(ctx, bypassKey{}, true)
}

// Skipped reports whether ctx, or a context it derives from, was marked by
// WithoutCache.
func Skipped(ctx context.Context) bool { return ctx.Value(bypassKey{}) != nil }

type bypassKey struct{}

// Stage returns the request path's cache stage over c, a middleware: set
// by package middleware (its init), whose dedupe machinery collapses
// concurrent misses. probe, if non-nil, keys each call on its request as
// the schema's attempt middleware would send it (sharekey.Probe); joined,
// if non-nil, is called each time a caller has joined a miss in flight,
// with the number of callers now waiting on it (tests).
var Stage func(c *Cache, probe *sharekey.Probe, joined func(waiters int)) func(http.RoundTripper) http.RoundTripper
