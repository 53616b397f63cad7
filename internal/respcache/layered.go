package respcache

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fusiongo/transport/internal/redisclient"
)

// Layered is a Redis store with a bounded memory level in front
// (response_cache.local_max_bytes): a lookup that the memory level answers
// fresh costs no round trip; one it does not goes to Redis, and what Redis
// has is kept in the memory level too. An invalidation on any replica
// reaches every replica's memory level through Redis pub/sub (Hub); an
// entry stays in the memory level at most localTTL, the bound on an
// invalidation that a broken subscription missed. Safe for concurrent use.
type Layered struct {
	local    *Memory       // immutable: this replica's level
	remote   *Redis        // immutable: the fleet's
	hub      *Hub          // immutable: the client's invalidation channel
	schema   string        // immutable
	localTTL time.Duration // immutable: the longest an entry stays in local
	now      func() time.Time
	drop     func() // immutable: takes local off the hub
}

// NewLayered returns the store of schema on remote with local in front,
// registered with hub for the invalidations of every replica. now is the
// clock freshness is judged by (the cache's).
func NewLayered(local *Memory, remote *Redis, hub *Hub, schema string, localTTL time.Duration, now func() time.Time) *Layered {
	l := &Layered{local: local, remote: remote, hub: hub, schema: schema, localTTL: localTTL, now: now}
	l.drop = hub.register(schema, local)
	return l
}

// Lookup answers from the memory level when it holds a fresh entry for
// one of keys (the sequence is then 0: a fresh hit is never followed by a
// Set), else from Redis, keeping what Redis found in the memory level.
func (l *Layered) Lookup(ctx context.Context, keys []Key, found []*Entry) (Seq, error) {
	if len(keys) == 0 {
		return l.remote.Lookup(ctx, nil, nil)
	}
	localSeq, _ := l.local.Lookup(ctx, keys, found)
	now := l.now()
	for _, e := range found {
		if e != nil && e.Fresh(now) {
			return 0, nil
		}
	}
	clear(found)
	seq, err := l.remote.Lookup(ctx, keys, found)
	if err != nil {
		return seq, err
	}
	for i, e := range found {
		if e != nil {
			if ttl := l.keep(e, now); ttl > 0 {
				// Refused if an invalidation reached this replica since
				// localSeq, read before Redis was asked. Detached: the
				// memory level counts an entry by its own bytes, and a
				// decoded entry's strings hold Redis's whole answer.
				d := e.detached()
				found[i] = d
				l.local.Set(ctx, keys[i], d, ttl, localSeq)
			}
		}
	}
	return seq, nil
}

// keep is how long the memory level keeps e at now: what the store would
// (its lifetime left and its stale windows), at most localTTL.
func (l *Layered) keep(e *Entry, now time.Time) time.Duration {
	left := e.Lifetime - e.Age(now) + max(e.StaleWhileRevalidate, e.StaleIfError)
	return min(left, l.localTTL)
}

// Set stores e in Redis under the Seq rule, and, if it was stored, in the
// memory level: refused there if an invalidation reached this replica
// since before the Redis write.
func (l *Layered) Set(ctx context.Context, k Key, e *Entry, ttl time.Duration, seq Seq) (bool, error) {
	localSeq, _ := l.local.Lookup(ctx, nil, nil)
	stored, err := l.remote.Set(ctx, k, e, ttl, seq)
	if err != nil || !stored {
		return stored, err
	}
	l.local.Set(ctx, k, e, min(ttl, l.localTTL), localSeq)
	return true, nil
}

// Invalidate removes the entries from Redis and from this replica's
// memory level, and tells every replica to remove them from theirs.
func (l *Layered) Invalidate(ctx context.Context, tags []string) (int, error) {
	n, err := l.remote.Invalidate(ctx, tags)
	l.local.Invalidate(ctx, tags)
	if perr := l.hub.publish(ctx, l.schema, tags); err == nil {
		err = perr
	}
	return n, err
}

// Stats reports the memory level's entries and bytes.
func (l *Layered) Stats() (entries, bytes int64, ok bool) { return l.local.Stats() }

// Health is the Redis store's.
func (l *Layered) Health() string { return l.remote.Health() }

// Close drops the memory level and takes it off the hub.
func (l *Layered) Close() error {
	l.drop()
	return l.local.Close()
}

// Hub is the invalidation channel of one Redis client: every replica on
// the same Redis and key prefix publishes its invalidations there, and
// each applies those of the others (and its own, again) to its memory
// levels. On every new subscription after the first (Redis lost and found
// again) it empties every memory level, whose invalidations may have been
// missed meanwhile. Safe for concurrent use; Close it with its client.
type Hub struct {
	c       *redisclient.Client // immutable
	channel string              // immutable: <prefix>inv
	onPeer  func(schema string) // immutable: called after each invalidation received; nil: none

	mu      sync.Mutex
	levels  map[string]map[*Memory]bool // guarded by mu: the memory levels per schema
	started bool                        // guarded by mu: the subscription runs
	ps      *redis.PubSub               // guarded by mu: the subscription once started
	closed  bool                        // guarded by mu: Close was called
	done    chan struct{}               // closed when the subscription's loop ends
}

// NewHub returns the hub of c. onPeer, if non-nil, is called with the
// schema of each invalidation it applies.
func NewHub(c *redisclient.Client, onPeer func(schema string)) *Hub {
	return &Hub{c: c, channel: c.Prefix() + "inv", onPeer: onPeer, levels: map[string]map[*Memory]bool{}, done: make(chan struct{})}
}

// register adds m as a memory level of schema, subscribing on the first,
// and returns the function that takes it off.
func (h *Hub) register(schema string, m *Memory) func() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.levels[schema] == nil {
		h.levels[schema] = map[*Memory]bool{}
	}
	h.levels[schema][m] = true
	if !h.started && !h.closed {
		h.started = true
		h.ps = h.c.Subscribe(context.Background(), h.channel)
		go h.run(h.ps)
	}
	return func() {
		h.mu.Lock()
		delete(h.levels[schema], m)
		h.mu.Unlock()
	}
}

// run applies the invalidations received until ps is closed.
func (h *Hub) run(ps *redis.PubSub) {
	defer close(h.done)
	ctx := context.Background()
	subscribed := 0
	for msg := range ps.ChannelWithSubscriptions(redis.WithChannelSize(256)) {
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				if subscribed++; subscribed > 1 {
					h.emptyAll() // invalidations may have been missed
				}
			}
		case *redis.Message:
			if schema, tags, ok := decodeInvalidation(m.Payload); ok {
				h.apply(ctx, schema, tags)
			}
		}
	}
}

// apply removes the entries of schema (tags: those tagged) from its memory
// levels.
func (h *Hub) apply(ctx context.Context, schema string, tags []string) {
	h.mu.Lock()
	levels := make([]*Memory, 0, len(h.levels[schema]))
	for m := range h.levels[schema] {
		levels = append(levels, m)
	}
	h.mu.Unlock()
	for _, m := range levels {
		m.Invalidate(ctx, tags)
	}
	if h.onPeer != nil {
		h.onPeer(schema)
	}
}

// emptyAll empties every memory level.
func (h *Hub) emptyAll() {
	h.mu.Lock()
	var all []*Memory
	for _, ms := range h.levels {
		for m := range ms {
			all = append(all, m)
		}
	}
	h.mu.Unlock()
	for _, m := range all {
		m.Invalidate(context.Background(), nil)
	}
}

// publish tells every replica of an invalidation of schema.
func (h *Hub) publish(ctx context.Context, schema string, tags []string) error {
	payload := encodeInvalidation(schema, tags)
	return h.c.Do(ctx, func(ctx context.Context, r redis.Cmdable) error {
		return r.Publish(ctx, h.channel, payload).Err()
	})
}

// Close ends the subscription and waits for its loop.
func (h *Hub) Close() {
	h.mu.Lock()
	started, ps := h.started, h.ps
	h.closed = true
	h.mu.Unlock()
	if started {
		ps.Close()
		<-h.done
	}
}

// An invalidation message is the schema's length, ':', the schema, then
// each tag after a NUL; no tag: every entry of the schema.
func encodeInvalidation(schema string, tags []string) string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(len(schema)))
	b.WriteByte(':')
	b.WriteString(schema)
	for _, t := range tags {
		b.WriteByte(0)
		b.WriteString(t)
	}
	return b.String()
}

func decodeInvalidation(p string) (schema string, tags []string, ok bool) {
	n, rest, found := strings.Cut(p, ":")
	size, err := strconv.Atoi(n)
	if !found || err != nil || size < 0 || size > len(rest) {
		return "", nil, false
	}
	schema, rest = rest[:size], rest[size:]
	if rest == "" {
		return schema, nil, true
	}
	if rest[0] != 0 {
		return "", nil, false
	}
	return schema, strings.Split(rest[1:], "\x00"), true
}
