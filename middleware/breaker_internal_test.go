package middleware

import (
	"testing"
	"time"
)

// TestBreakerBuckets drives a closed phase's window with chosen epochs: a
// bucket turns to a later epoch and forgets the earlier one; an outcome
// of an epoch older than its bucket's is dropped; the window holds the
// last ten epochs; a count saturates instead of spilling into the next.
func TestBreakerBuckets(t *testing.T) {
	b := NewBreaker(BreakerConfig{MinRequests: 3, FailureRatio: 0.5, Window: time.Hour})
	p := b.cur.Load()
	counts := func(epoch int64) (n, f int64) {
		bk := &p.buckets[epoch%breakerBuckets]
		if bk.epoch.Load() != epoch {
			return 0, 0
		}
		w := bk.word.Load()
		f = int64(w>>breakerFailShift) & breakerCountMax
		return f + int64(w)&breakerCountMax, f
	}
	b.count(p, 3, true)
	b.count(p, 3, false)
	if n, f := counts(3); n != 2 || f != 1 {
		t.Fatalf("epoch 3: %d outcomes, %d failures; want 2, 1", n, f)
	}
	if b.tripped(p, 3) {
		t.Fatal("tripped on 2 outcomes, min_requests 3")
	}
	b.count(p, 12, true) // same bucket as epoch 2, another one than 3
	if !b.tripped(p, 12) {
		t.Fatal("not tripped on 3 outcomes, 2 failures, in epochs 3 and 12")
	}
	if b.tripped(p, 13) {
		t.Fatal("tripped at epoch 13: epoch 3 is out of the window")
	}
	b.count(p, 13, false) // turns epoch 3's bucket
	if n, _ := counts(3); n != 0 {
		t.Fatal("epoch 3 still counted after its bucket turned to 13")
	}
	b.count(p, 3, true) // a late outcome of epoch 3: dropped
	if n, f := counts(13); n != 1 || f != 0 {
		t.Fatalf("epoch 13: %d outcomes, %d failures after a late outcome of epoch 3; want 1, 0", n, f)
	}

	bk := &p.buckets[14%breakerBuckets]
	b.count(p, 14, false)
	bk.word.Add(breakerCountMax - 1) // successes at their maximum
	b.count(p, 14, false)
	b.count(p, 14, true)
	if w := bk.word.Load(); w&breakerCountMax != breakerCountMax || (w>>breakerFailShift)&breakerCountMax != 1 || w>>breakerTagShift != 14 {
		t.Fatalf("saturated bucket %#x, want successes %d, 1 failure, tag 14", w, breakerCountMax)
	}
}

// TestBreakerEpochTag: epochs past the tag's 20 bits keep counting.
func TestBreakerEpochTag(t *testing.T) {
	b := NewBreaker(BreakerConfig{MinRequests: 2, FailureRatio: 1, Window: time.Hour})
	p := b.cur.Load()
	const e = 3<<20 + 5
	b.count(p, e, true)
	b.count(p, e+1, true)
	if !b.tripped(p, e+1) {
		t.Fatal("not tripped on two failures at epochs beyond 2^20")
	}
	b.count(p, e+10, false) // turns e's bucket: one failure of two left
	if b.tripped(p, e+10) {
		t.Fatal("tripped with one failure and one success, ratio 1")
	}
}
