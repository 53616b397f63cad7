package respcache

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fusiongo/transport/internal/redisclient"
)

// The keys of the Redis store, P being redis.key_prefix and S the schema's
// name as "<its length in bytes>:<name>" (so that no name, whatever it
// holds, makes its keys start like another schema's):
//
//	P e:S:<hex key>  an entry (the codec's bytes), PX its ttl
//	P t:S:<tag>      a sorted set of the entry keys tagged so, each scored
//	                 by its expiry (Redis time, ms); expires with its
//	                 longest-lived entry
//	P i:S            a hash: the sequence of the last invalidation of all
//	                 ("*"), of each tag ("t:<tag>"), and the floor ("f")
//	P iz:S           a sorted set: when each field of P i:S was written
//	P s:S            the invalidation sequence
//
// The Seq rule on Redis: an invalidation increments P s:S and writes the
// new value into P i:S's fields (one script), then removes; a Set's script
// refuses when any of "*", "f" and its tags' fields is above its seq, else
// writes the entry and its tag sets, atomically. A field older than
// invalidationMemory is forgotten, its sequence kept in "f" (the floor): a
// Set whose lookup came before a forgotten invalidation is refused, which
// costs only the answers more than that late. P i:S and P iz:S expire an
// hour after the schema's last invalidation (invalidationTTL): a Set more
// than an hour late is not guarded.
//
// The sequence starts, when P s:S is missing, at Redis's clock in
// microseconds, not at 1: so after a Redis that lost its keys (a restart
// without persistence) the sequences keep growing past the ones replicas
// saw before, and a Set given an old one is still refused.
const (
	invalidationTTL    = time.Hour
	invalidationMemory = tagMemory
)

// setScript stores an entry under the Seq rule.
//
//	KEYS: P i:S, the entry's key, then its tags' sets
//	ARGV: seq, ttl in ms, the encoded entry, then the tags' fields
var setScript = redis.NewScript(`
local seq = tonumber(ARGV[1])
local fields = {'*', 'f'}
for i = 4, #ARGV do fields[#fields + 1] = ARGV[i] end
for _, v in ipairs(redis.call('HMGET', KEYS[1], unpack(fields))) do
  if v and tonumber(v) > seq then return 0 end
end
local ttl = tonumber(ARGV[2])
redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[2])
if #KEYS > 2 then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  for i = 3, #KEYS do
    redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', string.format('%.0f', now))
    redis.call('ZADD', KEYS[i], string.format('%.0f', now + ttl), KEYS[2])
    if redis.call('PTTL', KEYS[i]) < ttl then redis.call('PEXPIRE', KEYS[i], ARGV[2]) end
  end
end
return 1
`)

// recordScript moves the sequence on and records it for all or for tags,
// forgetting the fields older than invalidationMemory into the floor.
//
//	KEYS: P s:S, P i:S, P iz:S
//	ARGV: invalidationTTL in ms, invalidationMemory in ms, then the fields
var recordScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('SET', KEYS[1], string.format('%.0f', tonumber(t[1]) * 1000000 + tonumber(t[2])))
end
local n = redis.call('INCR', KEYS[1])
local ns = string.format('%.0f', n)
for i = 3, #ARGV do
  redis.call('HSET', KEYS[2], ARGV[i], ns)
  redis.call('ZADD', KEYS[3], string.format('%.0f', now), ARGV[i])
end
local old = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', string.format('%.0f', now - tonumber(ARGV[2])), 'LIMIT', 0, 1000)
if #old > 0 then
  local floor = tonumber(redis.call('HGET', KEYS[2], 'f') or '0')
  for _, v in ipairs(redis.call('HMGET', KEYS[2], unpack(old))) do
    if v and tonumber(v) > floor then floor = tonumber(v) end
  end
  redis.call('HSET', KEYS[2], 'f', string.format('%.0f', floor))
  redis.call('HDEL', KEYS[2], unpack(old))
  redis.call('ZREM', KEYS[3], unpack(old))
end
redis.call('PEXPIRE', KEYS[2], ARGV[1])
redis.call('PEXPIRE', KEYS[3], ARGV[1])
return n
`)

// removeBatch is how many keys one UNLINK removes, and one SCAN asks for.
const removeBatch = 1000

// Redis is one source schema's view of the transport's Redis: its keys
// hold the schema's name, so schemas never mix, and every replica on the
// same Redis and key prefix shares the entries. NewRedis makes one.
type Redis struct {
	c      *redisclient.Client // the transport's; not closed by the store
	schema string              // the source schema's name, for errors

	// The keys' beginnings, set in NewRedis (see the key layout above).
	entryPrefix, tagPrefix, invKey, invTimesKey, seqKey string
	// seqKeyArg is seqKey boxed once, for Lookup's MGET; set in NewRedis.
	seqKeyArg any
	// memory is how long an invalidation field is kept before the floor
	// takes it; set in NewRedis (invalidationMemory), shortened by tests.
	memory time.Duration

	// decodeErrors counts the entries that did not decode (another
	// release's format, damage): each was a miss.
	decodeErrors atomic.Uint64
}

// NewRedis returns the store of schema on c.
func NewRedis(c *redisclient.Client, schema string) Store {
	s := strconv.Itoa(len(schema)) + ":" + schema
	p := c.Prefix()
	r := &Redis{
		c:           c,
		schema:      schema,
		entryPrefix: p + "e:" + s + ":",
		tagPrefix:   p + "t:" + s + ":",
		invKey:      p + "i:" + s,
		invTimesKey: p + "iz:" + s,
		seqKey:      p + "s:" + s,
		memory:      invalidationMemory,
	}
	r.seqKeyArg = r.seqKey
	return r
}

// entryKey returns the key of k's entry.
func (r *Redis) entryKey(k Key) string {
	return string(r.appendEntryKey(make([]byte, 0, len(r.entryPrefix)+2*len(k)), k))
}

// appendEntryKey appends the key of k's entry to dst.
func (r *Redis) appendEntryKey(dst []byte, k Key) []byte {
	dst = append(dst, r.entryPrefix...)
	return hex.AppendEncode(dst, k[:])
}

// tagField is a tag's field in the invalidation hash; the prefix keeps a
// tag named "*" or "f" from being taken for all or for the floor.
func tagField(tag string) string { return "t:" + tag }

// mget is a Lookup's MGET, reused through mgets: its arguments are boxed
// once (a string put in an any is an allocation; a pointer is not), and
// its entry keys are written into buffers kept from one lookup to the
// next. One lookup uses it at a time; Lookup puts it back when the round
// trip is over, and nothing keeps it past that.
type mget struct {
	args []any      // "mget", the sequence's key, then &keys[i] for each key
	keys []keyBytes // the entry keys
}

// keyBytes is an argument of a command written as its bytes, which
// go-redis takes from MarshalBinary.
type keyBytes struct{ b []byte }

// MarshalBinary returns the key's bytes, not a copy: go-redis writes them
// before the command returns.
func (k *keyBytes) MarshalBinary() ([]byte, error) { return k.b, nil }

var mgets = sync.Pool{New: func() any { return new(mget) }}

// newMget returns an MGET of seqKey and the entry keys of keys.
func (r *Redis) newMget(keys []Key) *mget {
	m := mgets.Get().(*mget)
	if cap(m.keys) < len(keys) {
		m.keys = make([]keyBytes, len(keys))
	}
	m.keys = m.keys[:len(keys)]
	m.args = append(m.args[:0], "mget", r.seqKeyArg)
	for i, k := range keys {
		m.keys[i].b = r.appendEntryKey(m.keys[i].b[:0], k)
		m.args = append(m.args, &m.keys[i])
	}
	return m
}

// release puts m back in the pool, holding no store's key.
func (m *mget) release() {
	clear(m.args)
	m.args = m.args[:0]
	mgets.Put(m)
}

// processor runs a command it is given: go-redis's *redis.Client, which
// redisclient hands its callers as a redis.Cmdable.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// Lookup reads the entries and the sequence in one round trip (MGET).
// An entry that does not decode is a miss, counted (DecodeErrors). The
// answer is read as strings, a missing key as "" (no entry and no
// sequence is ever empty): no value is boxed. Each entry's strings are
// go-redis's answer, which it allocates for each value and never reuses.
func (r *Redis) Lookup(ctx context.Context, keys []Key, found []*Entry) (Seq, error) {
	if len(found) < len(keys) {
		return 0, fmt.Errorf("respcache: lookup of %d keys into %d places", len(keys), len(found))
	}
	clear(found[:len(keys)])
	m := r.newMget(keys)
	var vals []string
	err := r.c.Do(ctx, func(ctx context.Context, c redis.Cmdable) error {
		p, ok := c.(processor)
		if !ok {
			return errors.New("the Redis client cannot run a command it is given")
		}
		cmd := redis.NewStringSliceCmd(ctx, m.args...)
		err := p.Process(ctx, cmd)
		vals = cmd.Val()
		return err
	})
	asked := len(m.args) - 1 // the command's name aside
	m.release()
	if err != nil {
		return 0, fmt.Errorf("response cache of %s: lookup: %w", r.schema, err)
	}
	if len(vals) != asked {
		return 0, fmt.Errorf("response cache of %s: lookup: MGET of %d keys answered %d values", r.schema, asked, len(vals))
	}
	var seq Seq
	if s := vals[0]; s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("response cache of %s: lookup: sequence %s: %w", r.schema, r.seqKey, err)
		}
		seq = Seq(n)
	}
	for i, s := range vals[1:] {
		if s == "" {
			continue
		}
		e, err := decodeEntry(s)
		if err != nil {
			r.decodeErrors.Add(1)
			continue
		}
		found[i] = e
	}
	return seq, nil
}

// Set stores e under k for ttl, with its tags, in one script that checks
// the Seq rule first. A ttl of zero or less stores nothing.
func (r *Redis) Set(ctx context.Context, k Key, e *Entry, ttl time.Duration, seq Seq) (bool, error) {
	if ttl <= 0 {
		return false, nil
	}
	ms := max(1, (ttl+time.Millisecond-1)/time.Millisecond)
	keys := make([]string, 2, 2+len(e.Tags))
	keys[0], keys[1] = r.invKey, r.entryKey(k)
	args := make([]any, 3, 3+len(e.Tags))
	args[0], args[1], args[2] = uint64(seq), int64(ms), appendEntry(nil, e)
	for _, tag := range e.Tags {
		keys = append(keys, r.tagPrefix+tag)
		args = append(args, tagField(tag))
	}
	var stored int64
	err := r.c.Do(ctx, func(ctx context.Context, c redis.Cmdable) error {
		var err error
		stored, err = setScript.Run(ctx, c, keys, args...).Int64()
		return err
	})
	if err != nil {
		return false, fmt.Errorf("response cache of %s: store: %w", r.schema, err)
	}
	return stored == 1, nil
}

// Invalidate records the invalidation (one script), then removes: the
// entries of the tags' sets, or every entry key of the schema by SCAN. It
// returns how many entries existed and were removed. Each round trip is
// bounded by redis.timeout; the whole by ctx.
func (r *Redis) Invalidate(ctx context.Context, tags []string) (int, error) {
	fields := []string{"*"}
	if len(tags) > 0 {
		fields = fields[:0]
		for _, tag := range tags {
			fields = append(fields, tagField(tag))
		}
	}
	args := make([]any, 2, 2+len(fields))
	args[0], args[1] = invalidationTTL.Milliseconds(), r.memory.Milliseconds()
	for _, f := range fields {
		args = append(args, f)
	}
	err := r.c.Do(ctx, func(ctx context.Context, c redis.Cmdable) error {
		return recordScript.Run(ctx, c, []string{r.seqKey, r.invKey, r.invTimesKey}, args...).Err()
	})
	if err != nil {
		return 0, fmt.Errorf("response cache of %s: invalidate: %w", r.schema, err)
	}
	var removed int
	if len(tags) == 0 {
		removed, err = r.removeAll(ctx)
	} else {
		removed, err = r.removeTagged(ctx, tags)
	}
	if err != nil {
		return removed, fmt.Errorf("response cache of %s: invalidate: recorded, %d removed, then: %w", r.schema, removed, err)
	}
	return removed, nil
}

// removeAll unlinks every entry key of the schema. The tag sets stay: an
// entry stored after the invalidation may be in them already, and their
// members that no longer exist go as they expire.
func (r *Redis) removeAll(ctx context.Context) (int, error) {
	match := globEscape(r.entryPrefix) + "*"
	removed := 0
	var cursor uint64
	for {
		var keys []string
		err := r.c.Do(ctx, func(ctx context.Context, c redis.Cmdable) error {
			var err error
			keys, cursor, err = c.Scan(ctx, cursor, match, removeBatch).Result()
			return err
		})
		if err != nil {
			return removed, err
		}
		if len(keys) > 0 {
			n, err := r.unlink(ctx, "", keys)
			removed += n
			if err != nil {
				return removed, err
			}
		}
		if cursor == 0 {
			return removed, nil
		}
	}
}

// removeTagged unlinks the entries in the tags' sets and takes them out of
// the sets.
func (r *Redis) removeTagged(ctx context.Context, tags []string) (int, error) {
	removed := 0
	for _, tag := range tags {
		set := r.tagPrefix + tag
		var members []string
		err := r.c.Do(ctx, func(ctx context.Context, c redis.Cmdable) error {
			var err error
			members, err = c.ZRange(ctx, set, 0, -1).Result()
			return err
		})
		if err != nil {
			return removed, err
		}
		for len(members) > 0 {
			batch := members[:min(len(members), removeBatch)]
			members = members[len(batch):]
			n, err := r.unlink(ctx, set, batch)
			removed += n
			if err != nil {
				return removed, err
			}
		}
	}
	return removed, nil
}

// unlink removes keys and, if set is not "", takes them out of that tag
// set in the same transaction: were the two apart, an entry stored in
// between (after the invalidation, so allowed) could lose its place in the
// set and escape the tag's next invalidation. It returns how many keys
// existed.
func (r *Redis) unlink(ctx context.Context, set string, keys []string) (int, error) {
	var n *redis.IntCmd
	err := r.c.Do(ctx, func(ctx context.Context, c redis.Cmdable) error {
		if set == "" {
			n = c.Unlink(ctx, keys...)
			return n.Err()
		}
		_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			n = p.Unlink(ctx, keys...)
			members := make([]any, len(keys))
			for i, k := range keys {
				members[i] = k
			}
			p.ZRem(ctx, set, members...)
			return nil
		})
		return err
	})
	if err != nil {
		return 0, err
	}
	return int(n.Val()), nil
}

// globEscape returns s as a SCAN MATCH pattern that matches s alone.
func globEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Stats reports nothing: counting a schema's keys on Redis is a scan.
func (r *Redis) Stats() (entries, bytes int64, ok bool) { return 0, 0, false }

// DecodeErrors returns how many entries did not decode since the store was
// made (each a miss).
func (r *Redis) DecodeErrors() uint64 { return r.decodeErrors.Load() }

// Close does nothing: the client is the transport's, closed by it.
func (r *Redis) Close() error { return nil }

// Health returns "ok" while the transport's Redis client sends, else the
// state of its breaker and the last failure (its password hidden): the
// status page's store health (Healther).
func (r *Redis) Health() string {
	h := r.c.Health()
	if h.State == redisclient.Closed {
		return "ok"
	}
	out := "redis " + string(h.State) + " since " + h.Since.UTC().Format(time.RFC3339) + " after " + strconv.Itoa(h.Failures) + " failures"
	if h.LastError != "" {
		out += ": " + h.LastError
	}
	return out
}
