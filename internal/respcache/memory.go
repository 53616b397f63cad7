package respcache

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2"
)

// tagMemory is how long the memory store remembers the invalidation of one
// tag (for the Seq rule). A Set whose lookup came before an invalidation
// that is forgotten is refused anyway (Memory.floor): past tagMemory such a
// Set would be an answer more than ten minutes late, longer than any
// request's bounds, so refusing every Set that old costs nothing and keeps
// the tag map bounded by the invalidations of the last tagMemory.
const tagMemory = 10 * time.Minute

// errClosed is the error of a call to a closed store.
var errClosed = errors.New("respcache: store closed")

// memItem is what the memory store holds under a key: the entry and the
// time to keep it. Each Set makes a new item, so the tag index can tell an
// entry from the one that replaced it under the same key by the pointer.
type memItem struct {
	e    *Entry        // immutable, shared by every hit
	ttl  time.Duration // how long the cache keeps it, from the Set
	size uint32        // e.Size(), its weight
}

// tagInvalidation is the last invalidation of one tag.
type tagInvalidation struct {
	seq Seq       // the sequence it recorded
	at  time.Time // when, to forget it after tagMemory
}

// Memory is one source schema's store in this process: an otter cache
// bounded by the bytes its entries weigh (Entry.Size), each entry kept for
// the ttl its Set gave. NewMemory makes one.
type Memory struct {
	// cache holds the entries; set in NewMemory. Its deletion listener
	// (forget) keeps tags true.
	cache *otter.Cache[Key, *memItem]

	// seq is the invalidation sequence: written under mu by Invalidate,
	// read by Lookup without a lock.
	seq atomic.Uint64
	// evictions counts the entries the byte bound pushed out; written by
	// the deletion listener.
	evictions atomic.Uint64

	// mu orders Set against Invalidate: a Set checks the Seq rule and
	// writes under it, and an Invalidate records and removes under it, so
	// no Set that began before an invalidation lands after its removal.
	// Lookup does not take it.
	mu       sync.Mutex
	allSeq   Seq                        // guarded by mu: the last invalidation of every entry
	floor    Seq                        // guarded by mu: the newest forgotten tag invalidation
	tagSeq   map[string]tagInvalidation // guarded by mu: last invalidation per tag, for tagMemory
	pruned   time.Time                  // guarded by mu: when tagSeq was last pruned
	closed   bool                       // guarded by mu: Close was called
	now      func() time.Time           // set in NewMemory (time.Now); tests move it
	tagIndex tagIndex                   // its own lock; taken under mu and by the deletion listener
}

// tagIndex maps each tag to the keys of the entries that carry it, and each
// key to the very item, so that the removal of an item that another has
// replaced leaves the new one indexed.
type tagIndex struct {
	// mu guards keys. It is taken by the cache's deletion listener, which
	// runs under a lock of the cache: so nothing may call the cache while
	// holding it.
	mu   sync.Mutex
	keys map[string]map[Key]*memItem // guarded by mu
}

// NewMemory returns an empty memory store holding at most maxBytes of
// entries by Entry.Size (at least 1: a smaller bound holds nothing).
// Past the bound otter evicts the entries least likely to be asked for
// again. Close it to let its memory go.
func NewMemory(maxBytes int) Store {
	m := &Memory{
		tagSeq:   make(map[string]tagInvalidation),
		tagIndex: tagIndex{keys: make(map[string]map[Key]*memItem)},
		now:      time.Now,
	}
	m.cache = otter.Must(&otter.Options[Key, *memItem]{
		MaximumWeight: uint64(max(maxBytes, 1)),
		Weigher:       func(_ Key, it *memItem) uint32 { return it.size },
		ExpiryCalculator: otter.ExpiryWritingFunc(func(e otter.Entry[Key, *memItem]) time.Duration {
			return e.Value.ttl
		}),
		// Atomic, not OnDeletion: that one runs each event on a goroutine
		// of its own, one per entry when every entry goes at once.
		OnAtomicDeletion: m.forget,
	})
	return m
}

// forget is the cache's deletion listener: it drops a deleted item from the
// tag index (whatever the cause: invalidation, replacement, eviction,
// expiry), so the index holds only what the cache does.
func (m *Memory) forget(ev otter.DeletionEvent[Key, *memItem]) {
	if ev.Cause == otter.CauseOverflow {
		m.evictions.Add(1)
	}
	m.tagIndex.remove(ev.Key, ev.Value)
}

func (ix *tagIndex) add(k Key, it *memItem) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, tag := range it.e.Tags {
		keys := ix.keys[tag]
		if keys == nil {
			keys = make(map[Key]*memItem)
			ix.keys[tag] = keys
		}
		keys[k] = it
	}
}

func (ix *tagIndex) remove(k Key, it *memItem) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, tag := range it.e.Tags {
		if keys := ix.keys[tag]; keys[k] == it {
			delete(keys, k)
			if len(keys) == 0 {
				delete(ix.keys, tag)
			}
		}
	}
}

// take removes the tags from the index and returns the keys they held,
// each once.
func (ix *tagIndex) take(tags []string) map[Key]struct{} {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	keys := make(map[Key]struct{})
	for _, tag := range tags {
		for k := range ix.keys[tag] {
			keys[k] = struct{}{}
		}
		delete(ix.keys, tag)
	}
	return keys
}

func (ix *tagIndex) reset() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	clear(ix.keys)
}

// Lookup writes the entries under keys into found. It allocates nothing.
func (m *Memory) Lookup(_ context.Context, keys []Key, found []*Entry) (Seq, error) {
	if len(found) < len(keys) {
		return 0, fmt.Errorf("respcache: lookup of %d keys into %d places", len(keys), len(found))
	}
	// The sequence before the entries: a Set given it is refused by any
	// invalidation that the lookup might not have seen.
	seq := Seq(m.seq.Load())
	for i, k := range keys {
		found[i] = nil
		if it, ok := m.cache.GetIfPresent(k); ok {
			found[i] = it.e
		}
	}
	return seq, nil
}

// Set stores e under k for ttl unless an invalidation of the schema or of
// one of e.Tags came after seq. A ttl of zero or less stores nothing.
func (m *Memory) Set(_ context.Context, k Key, e *Entry, ttl time.Duration, seq Seq) (bool, error) {
	if ttl <= 0 {
		return false, nil
	}
	it := &memItem{e: e, ttl: ttl, size: uint32(min(e.Size(), math.MaxUint32))}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false, errClosed
	}
	if m.allSeq > seq || m.floor > seq {
		return false, nil
	}
	for _, tag := range e.Tags {
		if m.tagSeq[tag].seq > seq {
			return false, nil
		}
	}
	// Indexed before it is in the cache: an eviction of it, which may
	// come as soon as it is, finds it in the index to remove.
	m.tagIndex.add(k, it)
	m.cache.Set(k, it)
	return true, nil
}

// Invalidate removes every entry (no tags) or those tagged with any of
// tags, after recording the invalidation for the Seq rule.
func (m *Memory) Invalidate(_ context.Context, tags []string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, errClosed
	}
	seq := Seq(m.seq.Add(1))
	removed := 0
	if len(tags) == 0 {
		m.allSeq = seq
		for k := range m.cache.Keys() {
			if _, ok := m.cache.Invalidate(k); ok {
				removed++
			}
		}
		m.tagIndex.reset()
		return removed, nil
	}
	now := m.now()
	for _, tag := range tags {
		m.tagSeq[tag] = tagInvalidation{seq: seq, at: now}
	}
	m.prune(now)
	// The index is exact here: the deletion listener runs within each
	// deletion, and a Set adds to it under mu. So each key taken holds
	// the very item indexed, tagged so.
	for k := range m.tagIndex.take(tags) {
		if _, ok := m.cache.Invalidate(k); ok {
			removed++
		}
	}
	return removed, nil
}

// prune forgets the tag invalidations older than tagMemory, raising floor
// to the newest it forgets; at most once per tagMemory/10, so that an
// invalidation costs a scan of the map only now and then. Called under mu.
func (m *Memory) prune(now time.Time) {
	if now.Sub(m.pruned) < tagMemory/10 {
		return
	}
	m.pruned = now
	for tag, inv := range m.tagSeq {
		if now.Sub(inv.at) > tagMemory {
			m.floor = max(m.floor, inv.seq)
			delete(m.tagSeq, tag)
		}
	}
}

// Stats reports otter's count of entries and their weight (Entry.Size).
// Both are estimates: an expired entry counts until otter's maintenance
// removes it.
func (m *Memory) Stats() (entries, bytes int64, ok bool) {
	return int64(m.cache.EstimatedSize()), int64(m.cache.WeightedSize()), true
}

// Evictions returns how many entries the byte bound has pushed out since
// the store was made (expiry and invalidation not counted).
func (m *Memory) Evictions() uint64 { return m.evictions.Load() }

// Close drops every entry and stops otter's clean-up goroutine; later
// calls of Set and Invalidate fail and lookups find nothing.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	m.cache.InvalidateAll()
	m.cache.StopAllGoroutines()
	m.tagIndex.reset()
	return nil
}
