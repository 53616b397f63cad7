package transport_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/redistest"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// redisConfig is cachedConfig on the Redis store r.
func redisConfig(path env.Path, url string, r *redistest.Redis, edit func(*env.ResponseCacheSettings)) env.Config {
	cfg := cachedConfig(path, url, func(c *env.ResponseCacheSettings) {
		c.Store = env.StoreRedis
		if edit != nil {
			edit(c)
		}
	})
	cfg.Redis = r.Settings()
	return cfg
}

// TestResponseCacheRedisFleet: two transports (two gateway replicas) on one
// Redis and key prefix share their entries, whole answers and entities
// alike, and an invalidation on one removes the other's entries; a
// transport on another prefix shares nothing.
func TestResponseCacheRedisFleet(t *testing.T) {
	r := redistest.StartRedis(t)
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			s := newCacheServer(t, cacheControl("max-age=60"))
			es := newEntityServer(t, "max-age=60")
			prefix := r.Prefix + string(path) + ":"
			replica := func(prefix string) (*transport.Transport, cacheEvents) {
				cfg := redisConfig(path, s.URL, r, nil)
				cfg.Redis.KeyPrefix = prefix
				cfg.SourceSchemas["entities"] = env.SourceSchema{URL: es.URL, Settings: cfg.SourceSchemas["products"].Settings}
				events := make(cacheEvents, 64)
				return newInvoker(t, cfg, transport.WithCacheEventHook(events.hook)), events
			}
			a, aEvents := replica(prefix)
			b, _ := replica(prefix)
			other, _ := replica(prefix + "other:")
			first, _ := postBody(t, a, context.Background(), cacheQuery)
			aEvents.await(t, "stored") // the write runs off the caller's goroutine
			if got, age := postBody(t, b, context.Background(), cacheQuery); got != first || age == "" {
				t.Fatalf("replica b got %q (Age %q), want replica a's stored %q", got, age, first)
			}
			if n := s.requests(); n != 1 {
				t.Fatalf("the source schema got %d requests, want 1", n)
			}
			postBody(t, other, context.Background(), cacheQuery)
			if n := s.requests(); n != 2 {
				t.Fatalf("a replica on another prefix was answered from the cache: %d requests, want 2", n)
			}
			if n, err := b.InvalidateCache(context.Background(), "products"); err != nil || n != 1 {
				t.Fatalf("InvalidateCache on b = %d, %v; want 1", n, err)
			}
			postBody(t, a, context.Background(), cacheQuery)
			if n := s.requests(); n != 3 {
				t.Fatalf("after b's invalidation a's call was answered from the cache: %d requests, want 3", n)
			}
			aEvents.await(t, "stored")

			resp, err := a.Post(context.Background(), "entities", []byte(entitiesBody(false, "1", "2")))
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			aEvents.await(t, "stored")
			aEvents.await(t, "stored")
			resp, err = b.Post(context.Background(), "entities", []byte(entitiesBody(false, "2", "1")))
			if err != nil {
				t.Fatal(err)
			}
			if body := readAll(t, resp); body != entityAnswer(nil, "2", "1") || es.requests() != 1 {
				t.Fatalf("replica b's entities: %s after %d requests; want a's entities, 1 request", body, es.requests())
			}
		})
	}
}

// TestResponseCacheRedisDown: Redis stopped under load and started again:
// every call is answered by the source schema, none failed by the cache;
// the lookups stop once the client's breaker pauses it (the status page
// says so), and once Redis is back the cache answers again.
func TestResponseCacheRedisDown(t *testing.T) {
	r := redistest.StartRedis(t)
	s := newCacheServer(t, cacheControl("max-age=60"))
	cfg := redisConfig(pathH1, s.URL, r, nil)
	cfg.Redis.Timeout = 200 * time.Millisecond
	events := make(cacheEvents, 4096)
	inv := newInvoker(t, cfg, transport.WithCacheEventHook(events.hook))
	var failed atomic.Int64
	var firstErr atomic.Value
	call := func(i int) {
		// Queries apart, so that most are misses that try to store.
		resp, err := inv.Post(context.Background(), "products", []byte(fmt.Sprintf(`{"query":"{ p%d }"}`, i%50)))
		if err != nil {
			failed.Add(1)
			firstErr.CompareAndSwap(nil, err.Error())
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			failed.Add(1)
		}
	}
	load := func(n int) {
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := range n {
					call(w*n + i)
				}
			})
		}
		wg.Wait()
	}
	load(50)
	for len(events) > 0 {
		<-events // the hits of the first load
	}
	r.Stop()
	load(100) // Redis gone: misses, the writes fail, the breaker pauses it
	js, _ := callStatus(t, inv.StatusHandler(), "/status", "application/json")
	if !strings.Contains(string(js), `"health": "redis open`) && !strings.Contains(string(js), `"health": "redis half-open`) {
		t.Errorf("with Redis down the status page does not show the store paused: %s", js)
	}
	for len(events) > 0 {
		if ev := <-events; ev == "hit" {
			t.Fatal("a call was answered from the cache with Redis stopped")
		}
	}
	r.Start()
	// The breaker pauses 5 s, then lets a trial through: wait (bounded)
	// until a call is answered from the cache again.
	deadline := time.Now().Add(30 * time.Second)
	for hit := false; !hit; {
		if time.Now().After(deadline) {
			t.Fatal("the cache never answered again after Redis came back")
		}
		call(0)
	drained:
		for {
			select {
			case ev := <-events:
				if ev == "hit" {
					hit = true
				}
			default:
				break drained
			}
		}
	}
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d calls failed, the first with %v: the cache must never fail a call", n, firstErr.Load())
	}
}

// TestRedisRestart: Redis restarted (emptied) under a schema's response
// cache and its shared rate limit (on_store_error: deny) while the
// client's pool holds connections, which Redis closed as it stopped: the
// calls after the restart each reach the schema (a miss, the limit's check
// answered), none fails, no lookup, write or check is a store error, the
// limit does not fall back, the client is not paused, and the next
// identical call is answered from the cache.
func TestRedisRestart(t *testing.T) {
	r := redistest.StartRedis(t)
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			s := newCacheServer(t, cacheControl("max-age=60"))
			cfg := redisConfig(path, s.URL, r, nil)
			cfg.Redis.KeyPrefix = r.Prefix + "restart:" + string(path) + ":"
			schema := cfg.SourceSchemas["products"]
			schema.RateLimit = env.RateLimitSettings{Store: env.StoreRedis, RequestsPerSecond: 1e6, Burst: 1000,
				OnStoreError: env.OnStoreErrorDeny, StoreTimeout: 5 * time.Second}
			cfg.SourceSchemas["products"] = schema
			events := make(cacheEvents, 4096)
			limits := newLimitEvents()
			inv := newInvoker(t, cfg, transport.WithCacheEventHook(events.hook), transport.WithRateLimitEventHook(limits.hook))
			query := func(i int) string { return fmt.Sprintf(`{"query":"{ p%d }"}`, i) }
			// Four callers at once, so that the pool holds connections.
			var wg sync.WaitGroup
			for w := range 4 {
				wg.Go(func() {
					for i := range 10 {
						resp, err := inv.Post(context.Background(), "products", []byte(query(w*10+i)))
						if err != nil {
							t.Errorf("a call before the restart: %v", err)
							return
						}
						io.Copy(io.Discard, resp.Body) // read whole: the answer is stored
						resp.Body.Close()
					}
				})
			}
			wg.Wait()
			for range 40 {
				events.await(t, "stored")
			}
			r.Stop()
			r.Start()
			before := s.requests()
			const calls = 10
			for i := range calls {
				if _, age := postBody(t, inv, context.Background(), query(100+i)); age != "" {
					t.Fatalf("call %d after the restart was answered from the cache (Age %s), want sent", i, age)
				}
			}
			if n := s.requests() - before; n != calls {
				t.Fatalf("the schema got %d requests for the %d calls after the restart", n, calls)
			}
			for range calls {
				events.await(t, "stored")
			}
			if _, age := postBody(t, inv, context.Background(), query(100)); age == "" {
				t.Fatal("the call repeated after the restart was sent, want answered from the cache")
			}
			for len(events) > 0 {
				if ev := <-events; strings.HasPrefix(ev, "store_error") {
					t.Errorf("after the restart the cache saw %q", ev)
				}
			}
			if n, fell := limits.count(transport.LimitStoreError), limits.count(transport.LimitFellBack); n+fell > 0 {
				t.Errorf("the rate limit saw %d store errors and fell back %d times, want none", n, fell)
			}
			if js, _ := callStatus(t, inv.StatusHandler(), "/status", "application/json"); !strings.Contains(string(js), `"health": "ok"`) {
				t.Errorf("the status page does not show the Redis store ok: %s", js)
			}
		})
	}
}

// TestResponseCacheTwoLevels: with a memory level in front of Redis, a
// replica answers its repeated calls from memory (the Redis store sees no
// lookup: its commands are counted), another replica fills its memory
// level from Redis, and an invalidation on one replica reaches the other's
// memory level: its next call is sent.
func TestResponseCacheTwoLevels(t *testing.T) {
	r := redistest.StartRedis(t)
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			s := newCacheServer(t, cacheControl("max-age=60"))
			prefix := r.Prefix + "levels:" + string(path) + ":"
			replica := func() (*transport.Transport, cacheEvents) {
				cfg := redisConfig(path, s.URL, r, func(c *env.ResponseCacheSettings) { c.LocalMaxBytes = 1 << 20 })
				cfg.Redis.KeyPrefix = prefix
				events := make(cacheEvents, 256)
				return newInvoker(t, cfg, transport.WithCacheEventHook(events.hook)), events
			}
			a, aEvents := replica()
			b, bEvents := replica()
			first, _ := postBody(t, a, context.Background(), cacheQuery)
			aEvents.await(t, "stored")
			for range 3 {
				if got, _ := postBody(t, b, context.Background(), cacheQuery); got != first {
					t.Fatalf("replica b got %q, want a's stored %q", got, first)
				}
			}
			if n := s.requests(); n != 1 {
				t.Fatalf("the source schema got %d requests, want 1", n)
			}
			// An invalidation on a reaches b's memory level: b's next call
			// is sent.
			if n, err := a.InvalidateCache(context.Background(), "products"); err != nil || n != 1 {
				t.Fatalf("InvalidateCache on a = %d, %v; want 1", n, err)
			}
			bEvents.await(t, "peer_invalidation")
			if got, _ := postBody(t, b, context.Background(), cacheQuery); got == first || s.requests() != 2 {
				t.Fatalf("after a's invalidation b got %q after %d requests; want a fresh answer, 2 requests", got, s.requests())
			}
			bEvents.await(t, "stored")
			// b's entry is in its memory level: with Redis stopped, b still
			// answers from there, unsent.
			r.Stop()
			for range 3 {
				if got, _ := postBody(t, b, context.Background(), cacheQuery); got == first || s.requests() != 2 {
					t.Fatalf("with Redis stopped b got %q after %d requests; want its memory level's answer", got, s.requests())
				}
			}
			r.Start()
		})
	}
}

// TestResponseCacheRedisSilent: a Redis that accepts connections and never
// answers: each lookup is a miss after redis.timeout, every call is
// answered by the source schema, the store's breaker pauses it, and the
// URL's password shows in no log line, error or status page.
func TestResponseCacheRedisSilent(t *testing.T) {
	const password = "s3cret-redis-pw-77"
	addr := wiretest.SilentListener(t)
	s := newCacheServer(t, cacheControl("max-age=60"))
	cfg := cachedConfig(pathH1, s.URL, func(c *env.ResponseCacheSettings) { c.Store = env.StoreRedis })
	cfg.Redis = env.RedisSettings{URL: "redis://gateway:" + password + "@" + addr + "/0", Timeout: 20 * time.Millisecond}
	var logs logBuffer
	events := make(cacheEvents, 256)
	inv := newInvoker(t, cfg, transport.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
		transport.WithCacheEventHook(events.hook))
	for i := range 12 {
		body, _ := postBody(t, inv, context.Background(), cacheQuery)
		if want := fmt.Sprintf(`{"data":{"n":%d}}`, i+1); body != want {
			t.Fatalf("call %d got %q, want the schema's %q", i, body, want)
		}
	}
	js, _ := callStatus(t, inv.StatusHandler(), "/status", "application/json")
	if !strings.Contains(string(js), `"health": "redis open`) {
		t.Errorf("the status page does not show the silent store paused: %s", js)
	}
	if n, err := inv.InvalidateCache(context.Background(), "products"); err == nil {
		t.Errorf("InvalidateCache on a silent Redis = %d, nil; want an error", n)
	} else if strings.Contains(err.Error(), password) {
		t.Errorf("the error shows the password: %v", err)
	}
	for what, text := range map[string]string{"log": logs.String(), "status page": string(js)} {
		if strings.Contains(text, password) {
			t.Errorf("the %s shows the password:\n%s", what, text)
		}
	}
	if !strings.Contains(logs.String(), "redis keeps failing") {
		t.Errorf("no log line says the store is paused:\n%s", logs.String())
	}
}
