package respcache

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/fusiongo/transport/answer"
	"github.com/fusiongo/transport/internal/answerdiff"
)

// In shadow mode (response_cache.mode: shadow) a cache looks up and stores
// as it would, but every call is sent and gets its fresh answer; where the
// lookup found a fresh entry, the entry is compared with the fresh answer,
// so that an operator sees whether caching the schema would have served
// wrong data before turning it on.

// ShadowDifference is one comparison of a fresh entry with the fresh answer
// that found them apart: when, and what differs (the answer package's
// kinds and JSON paths; no values, which are the callers' data).
type ShadowDifference struct {
	At    time.Time     `json:"at"`
	Age   int64         `json:"age"` // the entry's age then, in seconds
	Kinds []answer.Kind `json:"kinds"`
	Paths []string      `json:"paths"` // the JSON paths (or header names) that differ, at most answerdiff.MaxPaths
	diffs []answer.Difference
}

// maxShadowDifferences is how many recent differences a cache keeps for the
// status page.
const maxShadowDifferences = 20

// shadowLog is a cache's recent shadow differences and counts. Safe for
// concurrent use.
type shadowLog struct {
	mu     sync.Mutex
	recent []ShadowDifference // newest last, at most maxShadowDifferences; guarded by mu
}

// shadowComparer compares an entry (side "cache") with a fresh answer
// (side "source schema").
var shadowComparer = answerdiff.New(answerdiff.Options{A: "cache", B: "source schema"})

// CompareShadow compares e, a fresh entry the lookup found, with the fresh
// answer status and body, counts the comparison and keeps a difference for
// the status page.
func (c *Cache) CompareShadow(ctx context.Context, e *Entry, now time.Time, status int, body []byte) {
	var diffs []answer.Difference
	if status != e.Status {
		diffs = append(diffs, answer.Difference{Kind: answer.KindStatus, A: strconv.Itoa(e.Status), B: strconv.Itoa(status),
			Explanation: "the cache holds status " + strconv.Itoa(e.Status) + ", the source schema answered " + strconv.Itoa(status)})
	} else {
		diffs = shadowComparer.Body(e.Body, body)
	}
	if len(diffs) == 0 {
		c.event(ctx, Event{Kind: ShadowCompared, Reason: "equal"})
		return
	}
	d := ShadowDifference{At: now, Age: int64(e.Age(now) / time.Second), diffs: diffs}
	for _, df := range diffs {
		d.Kinds = appendKind(d.Kinds, df.Kind)
		d.Paths = append(d.Paths, df.Path)
	}
	c.shadow.mu.Lock()
	c.shadow.recent = append(c.shadow.recent, d)
	if len(c.shadow.recent) > maxShadowDifferences {
		c.shadow.recent = append(c.shadow.recent[:0:0], c.shadow.recent[len(c.shadow.recent)-maxShadowDifferences:]...)
	}
	c.shadow.mu.Unlock()
	c.event(ctx, Event{Kind: ShadowCompared, Reason: string(diffs[0].Kind)})
}

func appendKind(ks []answer.Kind, k answer.Kind) []answer.Kind {
	for _, o := range ks {
		if o == k {
			return ks
		}
	}
	return append(ks, k)
}

// ShadowDifferences returns the cache's recent shadow differences, newest
// first.
func (c *Cache) ShadowDifferences() []ShadowDifference {
	c.shadow.mu.Lock()
	defer c.shadow.mu.Unlock()
	out := make([]ShadowDifference, len(c.shadow.recent))
	for i, d := range c.shadow.recent {
		out[len(out)-1-i] = d
	}
	return out
}

// Shadow reports whether the cache is in shadow mode.
func (c *Cache) Shadow() bool { return c.shadowMode }
