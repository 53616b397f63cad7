package respcache

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fusiongo/transport/internal/redisclient"
	"github.com/fusiongo/transport/internal/testsupport/redistest"
)

// storeKind makes the stores of one kind for a test: open(schema) returns
// the store of schema; the stores of one test share what the kind shares
// (Redis: one server and one client).
type storeKind struct {
	name string
	open func(t *testing.T) func(schema string) Store
}

var storeKinds = []storeKind{
	{"memory", func(t *testing.T) func(string) Store {
		return func(string) Store {
			s := NewMemory(64 << 20)
			t.Cleanup(func() { s.Close() })
			return s
		}
	}},
	{"redis", func(t *testing.T) func(string) Store {
		c := newClient(t, redistest.StartRedis(t), redisclient.Breaker{})
		return func(schema string) Store { return NewRedis(c, schema) }
	}},
}

// newClient returns a client of r's server, closed when the test ends.
func newClient(t testing.TB, r *redistest.Redis, b redisclient.Breaker) *redisclient.Client {
	t.Helper()
	c, err := redisclient.NewWithBreaker(r.Settings(), nil, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// eachStore runs test on each kind of store.
func eachStore(t *testing.T, test func(t *testing.T, open func(schema string) Store)) {
	for _, k := range storeKinds {
		t.Run(k.name, func(t *testing.T) { test(t, k.open(t)) })
	}
}

func key(s string) Key { return sha256.Sum256([]byte(s)) }

// entry returns an entry with body body and tags.
func entry(body string, tags ...string) *Entry {
	return &Entry{
		Status:   200,
		Header:   http.Header{"Content-Type": {"application/json"}},
		Body:     []byte(body),
		Date:     time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC),
		Lifetime: time.Minute,
		Tags:     tags,
	}
}

// lookup returns the bodies stored under names ("" for none) and the seq.
func lookup(t *testing.T, s Store, names ...string) ([]string, Seq) {
	t.Helper()
	keys := make([]Key, len(names))
	for i, n := range names {
		keys[i] = key(n)
	}
	found := make([]*Entry, len(keys))
	for i := range found {
		found[i] = entry("garbage left by the caller")
	}
	seq, err := s.Lookup(context.Background(), keys, found)
	if err != nil {
		t.Fatalf("Lookup(%q): %v", names, err)
	}
	bodies := make([]string, len(found))
	for i, e := range found {
		if e != nil {
			bodies[i] = string(e.Body)
		}
	}
	return bodies, seq
}

func set(t *testing.T, s Store, name string, e *Entry, seq Seq) bool {
	t.Helper()
	ok, err := s.Set(context.Background(), key(name), e, time.Hour, seq)
	if err != nil {
		t.Fatalf("Set(%q): %v", name, err)
	}
	return ok
}

func invalidate(t *testing.T, s Store, tags ...string) int {
	t.Helper()
	n, err := s.Invalidate(context.Background(), tags)
	if err != nil {
		t.Fatalf("Invalidate(%q): %v", tags, err)
	}
	return n
}

func wantBodies(t *testing.T, s Store, names []string, want ...string) {
	t.Helper()
	got, _ := lookup(t, s, names...)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Lookup(%q) (-want +got):\n%s", names, diff)
	}
}

// TestSetLookup: entries come back whole, in the order asked, a missing
// key as nil over whatever found held; a second Set replaces the first.
func TestSetLookup(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(string) Store) {
		s := open("products")
		full := codecCases()["full"]
		_, seq := lookup(t, s, "a")
		if !set(t, s, "a", full, seq) || !set(t, s, "b", entry("b"), seq) {
			t.Fatal("a Set with the current seq stored nothing")
		}
		keys := []Key{key("b"), key("none"), key("a")}
		found := []*Entry{entry("x"), entry("y"), entry("z")}
		if _, err := s.Lookup(context.Background(), keys, found); err != nil {
			t.Fatal(err)
		}
		if found[1] != nil || string(found[0].Body) != "b" {
			t.Fatalf("found = %v", found)
		}
		if diff := cmp.Diff(full, found[2], entryOpts); diff != "" {
			t.Errorf("entry (-stored +found):\n%s", diff)
		}
		set(t, s, "a", entry("a2"), seq)
		wantBodies(t, s, []string{"a", "b"}, "a2", "b")
		if ok, err := s.Set(context.Background(), key("c"), entry("c"), 0, seq); ok || err != nil {
			t.Errorf("Set with ttl 0: %v, %v; want nothing stored", ok, err)
		}
		wantBodies(t, s, []string{"c"}, "")
	})
}

// TestExpiry: an entry is there until its ttl has passed, then gone;
// another with a long ttl stays.
func TestExpiry(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(string) Store) {
		s := open("products")
		const ttl = 300 * time.Millisecond
		set(t, s, "long", entry("long"), 0)
		start := time.Now()
		if ok, err := s.Set(context.Background(), key("short"), entry("short"), ttl, 0); !ok || err != nil {
			t.Fatalf("Set: %v, %v", ok, err)
		}
		if got, _ := lookup(t, s, "short"); got[0] == "" && time.Since(start) < ttl {
			t.Fatal("the entry is gone before its ttl")
		}
		// Poll, bounded: the entry must go once its ttl has passed.
		for deadline := time.Now().Add(20 * time.Second); ; {
			if got, _ := lookup(t, s, "short"); got[0] == "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the entry outlived its ttl by 20 s")
			}
			time.Sleep(10 * time.Millisecond)
		}
		wantBodies(t, s, []string{"long"}, "long")
	})
}

// TestInvalidateAll: every entry of the schema goes, counted once; then
// there is nothing left to count.
func TestInvalidateAll(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(string) Store) {
		s := open("products")
		for _, n := range []string{"a", "b", "c"} {
			set(t, s, n, entry(n, "tag-"+n), 0)
		}
		set(t, s, "d", entry("d"), 0)
		if n := invalidate(t, s); n != 4 {
			t.Fatalf("Invalidate() removed %d, want 4", n)
		}
		wantBodies(t, s, []string{"a", "b", "c", "d"}, "", "", "", "")
		if n := invalidate(t, s); n != 0 {
			t.Fatalf("second Invalidate() removed %d, want 0", n)
		}
		if n := invalidate(t, s, "tag-a"); n != 0 {
			t.Fatalf("Invalidate(tag-a) after all went removed %d, want 0", n)
		}
		_, seq := lookup(t, s)
		set(t, s, "a", entry("a", "tag-a"), seq)
		if n := invalidate(t, s, "tag-a"); n != 1 {
			t.Fatalf("Invalidate(tag-a) of an entry stored after removed %d, want 1", n)
		}
	})
}

// TestInvalidateTags: the entries tagged with any of the tags go, each
// counted once; the others stay.
func TestInvalidateTags(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(string) Store) {
		s := open("products")
		set(t, s, "a", entry("a", "x"), 0)
		set(t, s, "ab", entry("ab", "x", "y"), 0)
		set(t, s, "b", entry("b", "y"), 0)
		set(t, s, "c", entry("c", "z"), 0)
		set(t, s, "none", entry("none"), 0)
		set(t, s, "odd", entry("odd", "*", "f", ""), 0)
		names := []string{"a", "ab", "b", "c", "none", "odd"}
		if n := invalidate(t, s, "x", "y"); n != 3 {
			t.Fatalf("Invalidate(x, y) removed %d, want 3", n)
		}
		wantBodies(t, s, names, "", "", "", "c", "none", "odd")
		if n := invalidate(t, s, "x"); n != 0 {
			t.Fatalf("Invalidate(x) again removed %d, want 0", n)
		}
		if n := invalidate(t, s, "nothing has it"); n != 0 {
			t.Fatalf("Invalidate of an unused tag removed %d", n)
		}
		// A tag named like the fields of all and of the floor is a tag.
		if n := invalidate(t, s, "*"); n != 1 {
			t.Fatalf(`Invalidate("*") removed %d, want 1`, n)
		}
		wantBodies(t, s, names, "", "", "", "c", "none", "")
	})
}

// TestSeqRule: a Set given the seq of a lookup made before an invalidation
// that covers its entry stores nothing, for all and for a tag; one whose
// tags were not invalidated, or given a later seq, is stored.
func TestSeqRule(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(string) Store) {
		s := open("products")
		_, before := lookup(t, s, "k")
		invalidate(t, s)
		_, after := lookup(t, s, "k")
		if after <= before {
			t.Fatalf("seq %d after an invalidation, %d before: it must grow", after, before)
		}
		if set(t, s, "k", entry("k"), before) {
			t.Fatal("a Set from before Invalidate() was stored")
		}
		wantBodies(t, s, []string{"k"}, "")
		if !set(t, s, "k", entry("k"), after) {
			t.Fatal("a Set from after Invalidate() was refused")
		}

		_, before = lookup(t, s, "t")
		invalidate(t, s, "red")
		_, after = lookup(t, s, "t")
		if set(t, s, "t1", entry("t1", "blue", "red"), before) {
			t.Fatal("a Set tagged red from before Invalidate(red) was stored")
		}
		if !set(t, s, "t2", entry("t2", "blue"), before) {
			t.Fatal("a Set tagged blue from before Invalidate(red) was refused")
		}
		if !set(t, s, "t3", entry("t3"), before) {
			t.Fatal("an untagged Set from before Invalidate(red) was refused")
		}
		if !set(t, s, "t1", entry("t1", "blue", "red"), after) {
			t.Fatal("a Set tagged red from after Invalidate(red) was refused")
		}
		wantBodies(t, s, []string{"t1", "t2", "t3"}, "t1", "t2", "t3")
		// Invalidating all after the tag still refuses the old seq.
		invalidate(t, s)
		if set(t, s, "t2", entry("t2", "blue"), after) {
			t.Fatal("a Set from before Invalidate() was stored")
		}
	})
}

// TestSchemasApart: schemas' stores, whose names could make one's keys
// or key patterns look like another's ("a" and "a:b", "a*" and "ab"),
// hold the same key apart; invalidating one, all or by a tag they all use,
// leaves the others' entries and their Sets alone.
func TestSchemasApart(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(string) Store) {
		names := []string{"a", "a:b", "a*", "ab", "{a}"}
		stores := make(map[string]Store)
		for _, n := range names {
			stores[n] = open(n)
			set(t, stores[n], "k", entry("k of "+n, "shared"), 0)
		}
		for _, n := range names {
			wantBodies(t, stores[n], []string{"k"}, "k of "+n)
		}
		_, seqAB := lookup(t, stores["a:b"])
		for _, n := range []string{"a", "a*"} {
			if got := invalidate(t, stores[n]); got != 1 {
				t.Fatalf("Invalidate() of %s removed %d, want 1", n, got)
			}
		}
		if got := invalidate(t, stores["{a}"], "shared"); got != 1 {
			t.Fatalf("Invalidate(shared) of {a} removed %d, want 1", got)
		}
		for _, n := range names {
			want := "k of " + n
			if n == "a" || n == "a*" || n == "{a}" {
				want = ""
			}
			wantBodies(t, stores[n], []string{"k"}, want)
		}
		if !set(t, stores["a:b"], "k2", entry("k2", "shared"), seqAB) {
			t.Fatal("a:b's Set was refused by the invalidations of the others")
		}
	})
}

// TestConcurrentUse: lookups, stores and invalidations at once on one
// store (for the race detector), then the store still works.
func TestConcurrentUse(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(string) Store) {
		s := open("products")
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				ctx := context.Background()
				found := make([]*Entry, 2)
				for i := range 50 {
					k := key(fmt.Sprint(i % 7))
					seq, err := s.Lookup(ctx, []Key{k, key("x")}, found)
					if err != nil {
						t.Error(err)
						return
					}
					if _, err := s.Set(ctx, k, entry("v", fmt.Sprint("tag", i%3)), time.Minute, seq); err != nil {
						t.Error(err)
						return
					}
					if i%10 == g {
						if _, err := s.Invalidate(ctx, []string{fmt.Sprint("tag", i%3)}); err != nil {
							t.Error(err)
							return
						}
					}
				}
			})
		}
		wg.Wait()
		_, seq := lookup(t, s)
		set(t, s, "after", entry("after"), seq)
		wantBodies(t, s, []string{"after"}, "after")
	})
}

// checkForgotten checks the Seq rule after the invalidation of tag red
// (between a lookup that returned before and one that returned between)
// was forgotten, and tag blue's, after, was not: a Set from before red's
// is still refused, whatever its tags; one tagged red from between is
// stored; one tagged blue from between is refused.
func checkForgotten(t *testing.T, s Store, before, between Seq) {
	t.Helper()
	if set(t, s, "k", entry("k", "green"), before) {
		t.Fatal("a Set from before a forgotten invalidation was stored")
	}
	if !set(t, s, "k", entry("k", "red"), between) {
		t.Fatal("a Set tagged red from after red's invalidation was refused")
	}
	if set(t, s, "k", entry("k", "blue"), between) {
		t.Fatal("a Set tagged blue from before blue's invalidation was stored")
	}
}
