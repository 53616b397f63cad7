package respcache

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestMemoryEviction: past max_bytes the store evicts, and holds no more
// than max_bytes of entries by Entry.Size; the evictions are counted.
func TestMemoryEviction(t *testing.T) {
	const maxBytes = 64 << 10
	s := NewMemory(maxBytes).(*Memory)
	defer s.Close()
	body := strings.Repeat("x", 4<<10)
	const n = 100
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprint(i)
		set(t, s, names[i], entry(body, "all"), 0)
	}
	// otter evicts in its maintenance, after the writes: poll, bounded.
	for deadline := time.Now().Add(20 * time.Second); ; {
		s.cache.CleanUp()
		if _, bytes, _ := s.Stats(); bytes <= maxBytes {
			break
		}
		if time.Now().After(deadline) {
			_, bytes, _ := s.Stats()
			t.Fatalf("still %d bytes past a bound of %d", bytes, maxBytes)
		}
		time.Sleep(10 * time.Millisecond)
	}
	got, _ := lookup(t, s, names...)
	held, size := 0, entry(body, "all").Size()
	for _, b := range got {
		if b != "" {
			held++
		}
	}
	if held == 0 || held*size > maxBytes {
		t.Fatalf("%d entries of %d bytes held under a bound of %d", held, size, maxBytes)
	}
	if entries, _, _ := s.Stats(); entries != int64(held) {
		t.Errorf("Stats: %d entries, lookups found %d", entries, held)
	}
	if ev := s.Evictions(); ev < uint64(n-held) {
		t.Errorf("%d evictions counted, %d entries gone", ev, n-held)
	}
	// The tag index followed the evictions: invalidating the tag all
	// entries had counts only those held.
	if removed := invalidate(t, s, "all"); removed != held {
		t.Errorf("Invalidate(all) removed %d, %d were held", removed, held)
	}
}

// TestMemoryTagIndexFollows: the tag index forgets an entry that expires,
// is evicted or is replaced (its memory is bounded by the entries'), and a
// replacement under another tag is not removed by the old tag.
func TestMemoryTagIndexFollows(t *testing.T) {
	s := NewMemory(1 << 20).(*Memory)
	defer s.Close()
	ctx := context.Background()
	if ok, err := s.Set(ctx, key("short"), entry("short", "old"), time.Millisecond, 0); !ok || err != nil {
		t.Fatal(ok, err)
	}
	set(t, s, "k", entry("k", "old"), 0)
	set(t, s, "k", entry("k2", "new"), 0)
	for deadline := time.Now().Add(20 * time.Second); s.tagIndex.size() > 1; {
		s.cache.CleanUp()
		if time.Now().After(deadline) {
			t.Fatalf("the tag index still holds %d tags", s.tagIndex.size())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := invalidate(t, s, "old"); n != 0 {
		t.Fatalf("Invalidate(old) removed %d, want 0: k is tagged new now", n)
	}
	wantBodies(t, s, []string{"k"}, "k2")
	if n := invalidate(t, s, "new"); n != 1 {
		t.Fatalf("Invalidate(new) removed %d, want 1", n)
	}
	if n := s.tagIndex.size(); n != 0 {
		t.Fatalf("the tag index holds %d tags with no entry", n)
	}
}

// size returns how many tags the index holds.
func (ix *tagIndex) size() int {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return len(ix.keys)
}

// TestMemoryForgetsOldTags: a tag's invalidation is forgotten after
// tagMemory (the map stays bounded), yet a Set from before it is still
// refused (the floor), and one from after it is stored.
func TestMemoryForgetsOldTags(t *testing.T) {
	s := NewMemory(1 << 20).(*Memory)
	defer s.Close()
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return now }
	_, before := lookup(t, s)
	invalidate(t, s, "red")
	_, between := lookup(t, s)
	now = now.Add(tagMemory + time.Second)
	invalidate(t, s, "blue")
	if n := len(s.tagSeq); n != 1 {
		t.Fatalf("%d tags remembered, want 1 (blue)", n)
	}
	checkForgotten(t, s, before, between)
}

// TestMemoryLookupAllocatesNothing: a hit, a miss and the seq cost no
// allocation.
func TestMemoryLookupAllocatesNothing(t *testing.T) {
	s := NewMemory(1 << 20)
	defer s.Close()
	set(t, s, "hit", entry("hit", "t"), 0)
	keys := []Key{key("hit"), key("miss")}
	found := make([]*Entry, 2)
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := s.Lookup(context.Background(), keys, found); err != nil || found[0] == nil {
			t.Fatal("no hit", err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per lookup, want 0", allocs)
	}
}

// TestMemoryClose: a closed store holds nothing and refuses writes.
func TestMemoryClose(t *testing.T) {
	s := NewMemory(1 << 20)
	set(t, s, "k", entry("k"), 0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wantBodies(t, s, []string{"k"}, "")
	if entries, _, _ := s.Stats(); entries != 0 {
		t.Errorf("%d entries after Close", entries)
	}
	if ok, err := s.Set(context.Background(), key("k"), entry("k"), time.Hour, 0); ok || err == nil {
		t.Errorf("Set after Close: %v, %v", ok, err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// BenchmarkLookupHit is one hit of a 1 KiB entry: in memory (0 allocs,
// asserted by TestMemoryLookupAllocatesNothing) and on a loopback Redis.
func BenchmarkLookupHit(b *testing.B) {
	body := strings.Repeat("x", 1<<10)
	for _, k := range benchStores(b) {
		b.Run(k.name, func(b *testing.B) {
			s := k.store
			if _, err := s.Set(context.Background(), key("hit"), entry(body, "t"), time.Hour, 0); err != nil {
				b.Fatal(err)
			}
			keys := []Key{key("hit")}
			found := make([]*Entry, 1)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Lookup(context.Background(), keys, found); err != nil || found[0] == nil {
					b.Fatal("no hit", err)
				}
			}
		})
	}
}
