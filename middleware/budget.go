package middleware

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/fusiongo/transport/internal/defaults"
)

// RetryBudget bounds the retries (and hedges) of one source schema: over a
// sliding window of BudgetWindow, the extra tries stay at most Ratio times
// the first tries plus MinPerSecond for each second of the window. Its
// counts live in one-second buckets of atomics: First and Spend cost no
// allocation and take no lock. It is safe for concurrent use; a route kept
// across a reload keeps its budget.
type RetryBudget struct {
	ratio       float64                              // immutable
	floor       int64                                // immutable: MinPerSecond × the window's seconds
	onExhausted func(ctx context.Context, warn bool) // immutable; nil: none
	start       time.Time                            // immutable: the clock's origin (monotonic)
	buckets     [budgetBuckets]slot                  // each slot's fields atomic
	warned      atomic.Int64                         // the second of the last warn, +1 (0: never)

	// clock, if not nil, replaces time.Since(start) as the time elapsed
	// since the budget was made. Immutable: nil in every budget that
	// NewRetryBudget returns; set only by tests (SetBudgetClock in
	// export_test.go) before the budget's first use, so it is read without
	// synchronisation. The nil check keeps the production path one
	// monotonic clock read, with no indirect call and no allocation.
	clock func() time.Duration
}

// BudgetWindow is the sliding window of a RetryBudget.
const BudgetWindow = budgetBuckets * time.Second

const budgetBuckets = 10

// slot is one second of a RetryBudget's window.
type slot struct {
	sec    atomic.Int64 // the second it counts, +1 (0: unused)
	first  atomic.Int64
	extras atomic.Int64
}

// The defaults of RetryBudgetConfig.
const (
	DefaultBudgetRatio        = defaults.BudgetRatio        // 0.2
	DefaultBudgetMinPerSecond = defaults.BudgetMinPerSecond // 10
)

// RetryBudgetConfig configures NewRetryBudget.
type RetryBudgetConfig struct {
	// Ratio is the share of first tries that may be tried again in the
	// window. Zero, negative or NaN means the default. Default: 0.2.
	Ratio float64

	// MinPerSecond is the floor: retries allowed per second of the window
	// whatever the first tries. Negative means none; zero the default.
	// Default: 10.
	MinPerSecond int

	// OnExhausted, if set, is called for every retry or hedge that the
	// budget refuses, on the goroutine of the refused request, with the
	// context given to Spend (the request's); warn is true at most once a
	// second, for the one log line. It must not block. Default: nil.
	OnExhausted func(ctx context.Context, warn bool)
}

// NewRetryBudget returns an empty budget configured by cfg.
func NewRetryBudget(cfg RetryBudgetConfig) *RetryBudget {
	if !(cfg.Ratio > 0) { // zero, negative or NaN
		cfg.Ratio = DefaultBudgetRatio
	}
	switch {
	case cfg.MinPerSecond == 0:
		cfg.MinPerSecond = DefaultBudgetMinPerSecond
	case cfg.MinPerSecond < 0:
		cfg.MinPerSecond = 0
	}
	cfg.MinPerSecond = min(cfg.MinPerSecond, 1<<40) // so that × the window cannot overflow
	return &RetryBudget{
		ratio:       cfg.Ratio,
		floor:       int64(cfg.MinPerSecond) * budgetBuckets,
		onExhausted: cfg.OnExhausted,
		start:       time.Now(),
	}
}

// now returns the current second since b.start, +1.
func (b *RetryBudget) now() int64 {
	var d time.Duration
	if b.clock != nil {
		d = b.clock()
	} else {
		d = time.Since(b.start)
	}
	return int64(d/time.Second) + 1
}

// slot returns the bucket of second sec, emptied if it held an older one.
// Counts that race with the emptying may be lost: the budget is an
// estimate, never exceeded by more than the requests in flight at the turn
// of a second.
func (b *RetryBudget) slot(sec int64) *slot {
	s := &b.buckets[sec%budgetBuckets]
	for {
		old := s.sec.Load()
		if old >= sec {
			return s
		}
		if s.sec.CompareAndSwap(old, sec) {
			s.first.Store(0)
			s.extras.Store(0)
			return s
		}
	}
}

// First counts a first try.
func (b *RetryBudget) First() {
	if b == nil {
		return
	}
	b.slot(b.now()).first.Add(1)
}

// Spend takes one extra try (a retry or a hedge) from the budget, and
// reports whether there was one. ctx is the context of the request that
// would try again, handed to OnExhausted on a refusal. A nil budget always
// has one.
func (b *RetryBudget) Spend(ctx context.Context) bool {
	if b == nil {
		return true
	}
	sec := b.now()
	cur := b.slot(sec)
	cur.extras.Add(1) // reserved first, so that concurrent spenders see each other
	var first, extras int64
	for i := range b.buckets {
		s := &b.buckets[i]
		if v := s.sec.Load(); v > sec-budgetBuckets && v <= sec {
			first += s.first.Load()
			extras += s.extras.Load()
		}
	}
	if float64(extras) <= b.ratio*float64(first)+float64(b.floor) {
		return true
	}
	cur.extras.Add(-1)
	if b.onExhausted != nil {
		last := b.warned.Load()
		b.onExhausted(ctx, last < sec && b.warned.CompareAndSwap(last, sec))
	}
	return false
}

// refund gives back one extra try that Spend took for an attempt that was
// refused unsent (by the breaker or the rate limit further in): nothing
// reached the source schema, so nothing is charged. It returns it to the
// current second's count; one spent in the second before is not returned
// (the budget is an estimate).
func (b *RetryBudget) refund() {
	if b == nil {
		return
	}
	s := b.slot(b.now())
	for {
		v := s.extras.Load()
		if v <= 0 || s.extras.CompareAndSwap(v, v-1) {
			return
		}
	}
}
