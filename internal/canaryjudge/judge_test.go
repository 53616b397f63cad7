package canaryjudge_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/fusiongo/transport/canary"
	"github.com/fusiongo/transport/internal/canaryjudge"
)

// clock is a manual clock for the judge.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// rig is a judge on a manual clock with one schema, products, that keeps
// every event published.
type rig struct {
	clock  *clock
	judge  *canaryjudge.Judge
	s      *canaryjudge.Schema
	mu     sync.Mutex
	events []canary.Event
}

func newRig(t *testing.T, st canaryjudge.Settings) *rig {
	t.Helper()
	r := &rig{clock: &clock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}}
	r.judge = canaryjudge.New(st, canaryjudge.Options{Now: r.clock.Now, Publish: func(ev canary.Event) {
		r.mu.Lock()
		r.events = append(r.events, ev)
		r.mu.Unlock()
	}})
	r.s = r.judge.Sync([]string{"products"})["products"]
	return r
}

// record counts n outcomes on p, of which failed ones spread evenly.
func (r *rig) record(p canaryjudge.Side, n, failed int) {
	for i := range n {
		r.s.Record(p, (i+1)*failed/n > i*failed/n, r.s.Start())
	}
}

func (r *rig) reasons() []canary.Reason {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []canary.Reason
	for _, ev := range r.events {
		out = append(out, ev.Reason)
	}
	return out
}

func (r *rig) last() canary.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events[len(r.events)-1]
}

var base = canaryjudge.Settings{Rate: 0.1, Window: 100, MinRequests: 20, MaxErrorRatioDelta: 0.05, Cooldown: time.Minute, Interval: time.Minute}

// TestThreshold: a schema falls back exactly when sockets' error ratio
// exceeds legacy's by more than the delta with min_requests on each side.
func TestThreshold(t *testing.T) {
	tests := []struct {
		name                  string
		legacyN, legacyFailed int
		socketsN, socketsFail int
		wantFallback          bool
	}{
		{"healthy", 100, 0, 100, 0, false},
		{"equal errors", 100, 10, 100, 10, false},
		{"at the delta", 100, 0, 100, 5, false},
		{"above the delta", 100, 0, 100, 6, true},
		{"above legacy's errors plus the delta", 100, 10, 100, 16, true},
		{"too few sockets requests", 100, 0, 19, 19, false},
		{"too few legacy requests", 19, 0, 100, 100, false},
		{"min_requests each side", 20, 0, 20, 20, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, base)
			r.record(canaryjudge.Legacy, tt.legacyN, tt.legacyFailed)
			r.record(canaryjudge.Sockets, tt.socketsN, tt.socketsFail)
			fell := r.s.Share() == 0
			if fell != tt.wantFallback {
				t.Fatalf("share %v after legacy %d/%d and sockets %d/%d failed; want fallback %v", r.s.Share(), tt.legacyFailed, tt.legacyN, tt.socketsFail, tt.socketsN, tt.wantFallback)
			}
			if tt.wantFallback {
				ev := r.last()
				if ev.Reason != canary.Fallback || ev.From != 0.1 || ev.To != 0 || !ev.CooldownUntil.Equal(r.clock.Now().Add(time.Minute)) {
					t.Errorf("event %+v, want a fallback from 0.1 to 0 until a minute from now", ev)
				}
			}
		})
	}
}

// TestWindowSlides: only the last Window outcomes count; old failures
// leave the window.
func TestWindowSlides(t *testing.T) {
	st := base
	st.MaxErrorRatioDelta = 0.5
	r := newRig(t, st)
	r.record(canaryjudge.Legacy, 100, 0)
	r.record(canaryjudge.Sockets, 40, 20) // half failed: at the delta, not above
	if r.s.Share() == 0 {
		t.Fatal("fell back at the delta")
	}
	r.record(canaryjudge.Sockets, 100, 0) // the failures slide out
	got := r.judge.State().Schemas["products"].Sockets
	if got.Requests != 100 || got.Failures != 0 {
		t.Fatalf("sockets window %+v, want 100 requests and no failure: the window is the last 100", got)
	}
	r.record(canaryjudge.Sockets, 60, 60) // 60 of the last 100 failed
	if r.s.Share() != 0 {
		t.Fatalf("share %v, want 0 once 60 of the last 100 failed", r.s.Share())
	}
}

// TestCooldown: the share stays zero for the cooldown, comes back at the
// starting rate, and sockets starts over with an empty window.
func TestCooldown(t *testing.T) {
	r := newRig(t, base)
	r.record(canaryjudge.Legacy, 50, 0)
	r.record(canaryjudge.Sockets, 20, 20)
	if r.s.Share() != 0 {
		t.Fatalf("share %v, want 0", r.s.Share())
	}
	r.clock.Advance(time.Minute - time.Nanosecond)
	r.record(canaryjudge.Legacy, 1, 0)
	if r.s.Share() != 0 {
		t.Fatalf("share %v before the cooldown ended, want 0", r.s.Share())
	}
	r.clock.Advance(time.Nanosecond)
	r.record(canaryjudge.Legacy, 1, 0)
	if r.s.Share() != 0.1 {
		t.Fatalf("share %v after the cooldown, want the starting 0.1", r.s.Share())
	}
	if got, want := r.reasons(), []canary.Reason{canary.Start, canary.Fallback, canary.Restart}; !equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	st := r.judge.State().Schemas["products"]
	if st.Sockets.Requests != 0 || st.Fallbacks != 1 || st.CooldownUntil != nil {
		t.Fatalf("state %+v, want an empty sockets window, one fallback, no cooldown", st)
	}
	// The state read applies an ended cooldown too.
	r.record(canaryjudge.Sockets, 50, 50)
	r.clock.Advance(time.Minute)
	if got := r.judge.State().Schemas["products"]; got.Share != 0.1 || got.LastReason != canary.Restart {
		t.Fatalf("state after a second cooldown %+v, want share 0.1 by restart", got)
	}
}

// TestGrowth: a healthy schema grows by step at most once per interval, up
// to max_rate; with step 0 it never grows.
func TestGrowth(t *testing.T) {
	st := base
	st.Step, st.MaxRate = 0.25, 0.5
	r := newRig(t, st)
	r.record(canaryjudge.Legacy, 20, 0)
	r.record(canaryjudge.Sockets, 20, 0)
	if r.s.Share() != 0.1 {
		t.Fatalf("share %v before an interval passed, want 0.1", r.s.Share())
	}
	r.clock.Advance(time.Minute)
	r.record(canaryjudge.Sockets, 5, 0)
	if r.s.Share() != 0.35 {
		t.Fatalf("share %v after an interval, want 0.35 (one step, once)", r.s.Share())
	}
	r.clock.Advance(time.Minute)
	r.record(canaryjudge.Sockets, 1, 0)
	r.clock.Advance(time.Minute)
	r.record(canaryjudge.Sockets, 1, 0)
	if r.s.Share() != 0.5 {
		t.Fatalf("share %v, want max_rate 0.5", r.s.Share())
	}
	if got, want := r.reasons(), []canary.Reason{canary.Start, canary.Grow, canary.Grow}; !equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}

	st.Step = 0
	r = newRig(t, st)
	r.record(canaryjudge.Legacy, 20, 0)
	r.record(canaryjudge.Sockets, 20, 0)
	r.clock.Advance(time.Hour)
	r.record(canaryjudge.Sockets, 1, 0)
	if r.s.Share() != 0.1 {
		t.Fatalf("share %v with step 0, want 0.1", r.s.Share())
	}
}

// TestSocketsShare: keys spread evenly read as a share; equal keys take
// one path.
func TestSocketsShare(t *testing.T) {
	r := newRig(t, canaryjudge.Settings{Rate: 0.25, Window: 10, MinRequests: 1})
	const n = 1 << 16
	got := 0
	for i := range uint64(n) {
		if r.s.Sockets(i << 48) { // i/n as a share of 2^64
			got++
		}
	}
	if got != n/4 {
		t.Fatalf("%d of %d evenly spread keys went to sockets at 0.25, want %d", got, n, n/4)
	}
}

// TestSync: a reload keeps the state of the schemas it keeps, starts the
// new ones and forgets the removed ones.
func TestSync(t *testing.T) {
	r := newRig(t, base)
	r.record(canaryjudge.Legacy, 50, 0)
	r.record(canaryjudge.Sockets, 50, 50)
	got := r.judge.Sync([]string{"products", "reviews"})
	if got["products"] != r.s || got["products"].Share() != 0 {
		t.Fatalf("Sync replaced products' state (share %v)", got["products"].Share())
	}
	if got["reviews"].Share() != 0.1 {
		t.Fatalf("new schema's share %v, want 0.1", got["reviews"].Share())
	}
	r.judge.Sync([]string{"reviews"})
	if _, ok := r.judge.State().Schemas["products"]; ok {
		t.Fatal("products is still judged after it was removed")
	}
	if again := r.judge.Sync([]string{"products"}); again["products"] == r.s || again["products"].Share() != 0.1 {
		t.Fatal("products came back with its old state")
	}
}

// TestHandler: the state as JSON.
func TestHandler(t *testing.T) {
	r := newRig(t, base)
	r.record(canaryjudge.Legacy, 50, 0)
	r.record(canaryjudge.Sockets, 20, 20)
	w := httptest.NewRecorder()
	r.judge.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
	var got struct {
		Schemas map[string]struct {
			Share         float64    `json:"share"`
			CooldownUntil *time.Time `json:"cooldown_until"`
			Sockets       struct {
				Requests, Failures int
			} `json:"sockets"`
			Fallbacks int `json:"fallbacks"`
		} `json:"schemas"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != 200 {
		t.Fatalf("status %d, %v: %s", w.Code, err, w.Body)
	}
	p := got.Schemas["products"]
	if p.Share != 0 || p.CooldownUntil == nil || !p.CooldownUntil.Equal(r.clock.Now().Add(time.Minute)) || p.Fallbacks != 1 || p.Sockets.Requests != 0 {
		t.Fatalf("state %s", w.Body)
	}
	w = httptest.NewRecorder()
	r.judge.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", nil))
	if w.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST: status %d, want 405", w.Code)
	}
}

// TestRecordAllocs: the per-call path allocates nothing.
func TestRecordAllocs(t *testing.T) {
	r := newRig(t, base)
	r.record(canaryjudge.Legacy, 100, 0)
	if n := testing.AllocsPerRun(1000, func() {
		if r.s.Sockets(12345) {
			r.s.Record(canaryjudge.Sockets, false, r.s.Start())
		} else {
			r.s.Record(canaryjudge.Legacy, false, r.s.Start())
		}
	}); n != 0 {
		t.Fatalf("%v allocations per call, want 0", n)
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func BenchmarkRecord(b *testing.B) {
	j := canaryjudge.New(base, canaryjudge.Options{})
	s := j.Sync([]string{"products"})["products"]
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var k uint64
		for pb.Next() {
			k += 0x9e3779b97f4a7c15
			p := canaryjudge.Legacy
			if s.Sockets(k) {
				p = canaryjudge.Sockets
			}
			s.Record(p, false, s.Start())
		}
	})
}

// TestWindowRollsFailuresOut: a failure leaves a window's count when a
// newer outcome takes its slot, so failures that rolled out of both
// windows neither cause a fallback nor hide one.
func TestWindowRollsFailuresOut(t *testing.T) {
	st := canaryjudge.Settings{Rate: 0.1, Window: 10, MinRequests: 10, MaxErrorRatioDelta: 0.15, Cooldown: time.Minute}
	type step struct {
		path         canaryjudge.Side
		both         bool // n successes on each path, legacy first, alternating
		n, failed    int
		wantFallback bool // a fallback by the end of this step
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{
			// Legacy has no requests yet, so nothing is judged until its
			// window fills; sockets' failures have all rolled out by then.
			name: "sockets' failures rolled out before legacy counts",
			steps: []step{
				{path: canaryjudge.Sockets, n: 10, failed: 10},
				{path: canaryjudge.Sockets, n: 10},
				{path: canaryjudge.Legacy, n: 10},
			},
		},
		{
			// Both windows full of failures, then of successes: no
			// fallback; then sockets fails past legacy's ratio plus the
			// delta, and falls back.
			name: "both windows rolled over to successes, then sockets fails",
			steps: []step{
				{path: canaryjudge.Legacy, n: 10, failed: 10},
				{path: canaryjudge.Sockets, n: 10, failed: 10},
				{both: true, n: 10},
				{path: canaryjudge.Sockets, n: 1, failed: 1},
				{path: canaryjudge.Sockets, n: 1, failed: 1, wantFallback: true},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, st)
			for i, s := range tc.steps {
				if s.both {
					for range s.n {
						r.record(canaryjudge.Legacy, 1, 0)
						r.record(canaryjudge.Sockets, 1, 0)
					}
				} else {
					r.record(s.path, s.n, s.failed)
				}
				if fell := r.s.Share() == 0; fell != s.wantFallback {
					c := r.judge.State().Schemas["products"]
					t.Fatalf("after step %d (%s: %d calls, %d failed): share %v, want fallback %v; legacy %d/%d failed, sockets %d/%d",
						i, s.path, s.n, s.failed, r.s.Share(), s.wantFallback, c.Legacy.Failures, c.Legacy.Requests, c.Sockets.Failures, c.Sockets.Requests)
				}
			}
		})
	}
}
