package respcache

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/fusiongo/transport/internal/redisclient"
	"github.com/fusiongo/transport/internal/testsupport/race"
	"github.com/fusiongo/transport/internal/testsupport/redistest"
)

// raw runs one command on c's Redis, outside any store.
func raw(t *testing.T, c *redisclient.Client, fn func(ctx context.Context, r redis.Cmdable) error) {
	t.Helper()
	if err := c.Do(context.Background(), fn); err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
}

// TestRedisLookupOneRoundTrip: a lookup of several keys is one command
// (MGET of the entries and the sequence).
func TestRedisLookupOneRoundTrip(t *testing.T) {
	c := newClient(t, redistest.StartRedis(t), redisclient.Breaker{})
	s := NewRedis(c, "products")
	set(t, s, "a", entry("a"), 0)
	invalidate(t, s, "z")
	h := &redistest.Counter{}
	c.AddHook(h)
	got, seq := lookup(t, s, "a", "b", "a")
	if got[0] != "a" || got[1] != "" || got[2] != "a" || seq == 0 {
		t.Fatalf("Lookup = %q, seq %d", got, seq)
	}
	if w := h.Wire(); w[1] != 1 {
		t.Fatalf("a lookup of 3 keys sent %d commands, want 1", w[1])
	}
}

// TestRedisLookupAllocs: a hit on Redis allocates the command, its
// answer (the values, the entry's bytes) and the decoded entry (the entry
// with its strings, its header map, its body): at most 7, whatever the
// number of headers, tags and vary names.
func TestRedisLookupAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates, and drops pooled items")
	}
	c := newClient(t, redistest.StartRedis(t), redisclient.Breaker{})
	s := NewRedis(c, "products")
	e := entry(`{"data":{"n":1}}`, "product:1", "products")
	e.Header["Cache-Control"] = []string{"public", "max-age=60"}
	e.Header["X-Request-Id"] = []string{"r1"}
	e.Shared, e.VaryNames = true, []string{"Accept-Language", "Authorization"}
	set(t, s, "hit", e, 0)
	keys, found := []Key{key("hit")}, make([]*Entry, 1)
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := s.Lookup(context.Background(), keys, found); err != nil || found[0] == nil {
			t.Fatal("no hit", err)
		}
	})
	if allocs > 7 {
		t.Errorf("a hit on Redis allocates %v, want at most 7", allocs)
	}
}

// TestRedisHitsOwnTheirMemory: an entry a lookup returned (its header
// strings, tags, vary names and body) is unchanged by the lookups after
// it, which read other entries of the same sizes into whatever buffers
// the client reuses.
func TestRedisHitsOwnTheirMemory(t *testing.T) {
	c := newClient(t, redistest.StartRedis(t), redisclient.Breaker{})
	s := NewRedis(c, "products")
	stored := func(n int) *Entry {
		e := entry(fmt.Sprintf(`{"data":{"n":%d}}`, n), fmt.Sprintf("tag:%d", n))
		e.Header["X-N"] = []string{strconv.Itoa(n), strconv.Itoa(n + 1)}
		e.VaryNames = []string{fmt.Sprintf("X-Vary-%d", n)}
		return e
	}
	set(t, s, "1", stored(1), 0)
	found := make([]*Entry, 1)
	if _, err := s.Lookup(context.Background(), []Key{key("1")}, found); err != nil || found[0] == nil {
		t.Fatal("no hit", err)
	}
	first := found[0]
	for n := 2; n < 10; n++ {
		set(t, s, strconv.Itoa(n), stored(n), 0)
		if _, err := s.Lookup(context.Background(), []Key{key(strconv.Itoa(n))}, found); err != nil || found[0] == nil {
			t.Fatal("no hit", err)
		}
	}
	if diff := cmp.Diff(stored(1), first, entryOpts); diff != "" {
		t.Fatalf("the first hit changed after later lookups (-stored +hit):\n%s", diff)
	}
}

// TestRedisDecodeErrorIsMiss: an entry key holding what the codec cannot
// read is a miss, counted, and the other keys of the lookup still hit.
func TestRedisDecodeErrorIsMiss(t *testing.T) {
	c := newClient(t, redistest.StartRedis(t), redisclient.Breaker{})
	s := NewRedis(c, "products").(*Redis)
	set(t, s, "good", entry("good"), 0)
	raw(t, c, func(ctx context.Context, r redis.Cmdable) error {
		return r.Set(ctx, s.entryKey(key("bad")), "\x01not an entry", 0).Err()
	})
	wantBodies(t, s, []string{"bad", "good"}, "", "good")
	if n := s.DecodeErrors(); n != 1 {
		t.Fatalf("DecodeErrors = %d, want 1", n)
	}
}

// TestRedisSharedByPrefix: two clients (two replicas) on one server and
// prefix share their entries and invalidations; a third with another
// prefix sees none of them.
func TestRedisSharedByPrefix(t *testing.T) {
	r := redistest.StartRedis(t)
	one := NewRedis(newClient(t, r, redisclient.Breaker{}), "products")
	two := NewRedis(newClient(t, r, redisclient.Breaker{}), "products")
	other := r.Settings()
	other.KeyPrefix = r.Prefix + "other:"
	oc, err := redisclient.New(other, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer oc.Close()
	three := NewRedis(oc, "products")

	set(t, one, "k", entry("from one", "t"), 0)
	set(t, three, "k", entry("from three", "t"), 0)
	wantBodies(t, two, []string{"k"}, "from one")
	wantBodies(t, three, []string{"k"}, "from three")

	_, seq := lookup(t, one)
	if n := invalidate(t, two, "t"); n != 1 {
		t.Fatalf("Invalidate(t) through two removed %d, want 1", n)
	}
	wantBodies(t, one, []string{"k"}, "")
	wantBodies(t, three, []string{"k"}, "from three")
	if set(t, one, "k", entry("late", "t"), seq) {
		t.Fatal("one's Set from before two's invalidation was stored")
	}
	if !set(t, three, "k2", entry("k2", "t"), 0) {
		t.Fatal("another prefix's Set was refused by this prefix's invalidation")
	}
	if n := invalidate(t, one); n != 0 {
		t.Fatalf("Invalidate() removed %d, want 0", n)
	}
	wantBodies(t, three, []string{"k", "k2"}, "from three", "k2")
}

// TestRedisSeqSurvivesRestart: after a Redis that lost its keys (restarted
// without persistence), the sequence still grows past what replicas saw:
// a Set from before an invalidation made after the restart is refused.
func TestRedisSeqSurvivesRestart(t *testing.T) {
	r := redistest.StartRedis(t)
	s := NewRedis(newClient(t, r, redisclient.Breaker{}), "products")
	invalidate(t, s)
	_, before := lookup(t, s)
	r.Stop()
	r.Start()
	invalidate(t, s)
	_, after := lookup(t, s)
	if after <= before {
		t.Fatalf("seq %d after the restart and an invalidation, %d before", after, before)
	}
	if set(t, s, "k", entry("k"), before) {
		t.Fatal("a Set from before the restart's invalidation was stored")
	}
}

// TestRedisForgetsOldFields: an invalidation field older than the store's
// memory is forgotten (the hash stays bounded), yet a Set from before it
// is still refused (the floor) and one from after it is stored.
func TestRedisForgetsOldFields(t *testing.T) {
	c := newClient(t, redistest.StartRedis(t), redisclient.Breaker{})
	s := NewRedis(c, "products").(*Redis)
	s.memory = time.Millisecond
	_, before := lookup(t, s)
	invalidate(t, s, "red")
	_, between := lookup(t, s)
	// Invalidate another tag until red's field is gone: Redis's clock has
	// moved past the memory. Bounded.
	for deadline := time.Now().Add(20 * time.Second); ; {
		invalidate(t, s, "blue")
		var fields []string
		raw(t, c, func(ctx context.Context, r redis.Cmdable) error {
			var err error
			fields, err = r.HKeys(ctx, s.invKey).Result()
			return err
		})
		if !strings.Contains(strings.Join(fields, ","), "t:red") {
			if len(fields) > 3 {
				t.Fatalf("invalidation fields %q: old ones are kept", fields)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("red's field is still there: %q", fields)
		}
		time.Sleep(5 * time.Millisecond)
	}
	checkForgotten(t, s, before, between)
}

// TestRedisTagSetsBounded: a tag set does not keep the keys of entries that
// expired: each Set takes them out.
func TestRedisTagSetsBounded(t *testing.T) {
	c := newClient(t, redistest.StartRedis(t), redisclient.Breaker{})
	s := NewRedis(c, "products").(*Redis)
	ctx := context.Background()
	for _, n := range []string{"a", "b", "c"} {
		if ok, err := s.Set(ctx, key(n), entry(n, "t"), time.Millisecond, 0); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	for deadline := time.Now().Add(20 * time.Second); ; {
		set(t, s, "live", entry("live", "t"), 0)
		var n int64
		raw(t, c, func(ctx context.Context, r redis.Cmdable) error {
			var err error
			n, err = r.ZCard(ctx, s.tagPrefix+"t").Result()
			return err
		})
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tag set holds %d keys, want the live one", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRedisStopped: with Redis stopped mid-test, under concurrent use,
// every call returns an error (none hangs); after five failures the
// breaker stops sending (a later call costs nothing on the wire and says
// the store is paused); once Redis is back and the pause over, the store
// works again.
func TestRedisStopped(t *testing.T) {
	r := redistest.StartRedis(t)
	var mu sync.Mutex
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	c := newClient(t, r, redisclient.Breaker{Now: clock})
	h := &redistest.Counter{}
	c.AddHook(h)
	s := NewRedis(c, "products")
	set(t, s, "k", entry("k"), 0)
	wantBodies(t, s, []string{"k"}, "k")

	r.Stop()
	var wg sync.WaitGroup
	ctx := context.Background()
	for range 4 {
		wg.Go(func() {
			found := make([]*Entry, 1)
			for range 5 {
				if _, err := s.Lookup(ctx, []Key{key("k")}, found); err == nil {
					t.Error("a lookup on a stopped Redis succeeded")
				}
				if ok, err := s.Set(ctx, key("k"), entry("k"), time.Hour, 0); ok || err == nil {
					t.Error("a Set on a stopped Redis succeeded")
				}
			}
		})
	}
	wg.Wait()
	if hl := c.Health(); hl.State != redisclient.Open {
		t.Fatalf("after 40 failed calls: %+v, want open", hl)
	}
	before := h.Wire()
	found := make([]*Entry, 1)
	if _, err := s.Lookup(ctx, []Key{key("k")}, found); !errors.Is(err, redisclient.ErrStoreUnavailable) {
		t.Fatalf("lookup while paused: %v, want ErrStoreUnavailable", err)
	}
	if _, err := s.Set(ctx, key("k"), entry("k"), time.Hour, 0); !errors.Is(err, redisclient.ErrStoreUnavailable) {
		t.Fatalf("Set while paused: %v", err)
	}
	if _, err := s.Invalidate(ctx, nil); !errors.Is(err, redisclient.ErrStoreUnavailable) {
		t.Fatalf("Invalidate while paused: %v", err)
	}
	if after := h.Wire(); after != before {
		t.Fatalf("paused calls reached the wire: dials, commands %v then %v", before, after)
	}

	r.Start()
	mu.Lock()
	now = now.Add(redisclient.DefaultPause)
	mu.Unlock()
	_, seq := lookup(t, s, "k") // the trial: Redis came back empty
	if !set(t, s, "k", entry("back"), seq) {
		t.Fatal("a Set after the return stored nothing")
	}
	wantBodies(t, s, []string{"k"}, "back")
	if hl := c.Health(); hl.State != redisclient.Closed {
		t.Fatalf("after the return: %+v", hl)
	}
}

// benchStore is one store for BenchmarkLookupHit.
type benchStore struct {
	name  string
	store Store
}

func benchStores(b *testing.B) []benchStore {
	m := NewMemory(64 << 20)
	b.Cleanup(func() { m.Close() })
	stores := []benchStore{{"memory", m}}
	r := redistest.StartRedis(b)
	c, err := redisclient.New(r.Settings(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return append(stores, benchStore{"redis", NewRedis(c, "products")})
}
