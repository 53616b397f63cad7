package fleetlimit

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/redisclient"
	"github.com/fusiongo/transport/internal/testsupport/redistest"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// rig is a Limit on a client of a test's Redis, with what it logged, the
// events it reported and the client's wire.
type rig struct {
	l      *Limit
	c      *redisclient.Client
	wire   *redistest.Counter
	logs   *wiretest.LogBuffer
	events chan Event
}

// newRig makes a limit of rps and burst on r under prefix, bounded by
// timeout, its client's breaker on clock now (nil: time.Now).
func newRig(t testing.TB, r *redistest.Redis, prefix string, rps float64, burst int, timeout time.Duration, now func() time.Time, hold func()) *rig {
	t.Helper()
	s := r.Settings()
	s.KeyPrefix = prefix
	g := newRigOn(t, s, rps, burst, timeout, now)
	if hold != nil {
		g.wire.Before = func(string) { hold() }
	}
	return g
}

// newRigOn is newRig on a client of settings s.
func newRigOn(t testing.TB, s env.RedisSettings, rps float64, burst int, timeout time.Duration, now func() time.Time) *rig {
	t.Helper()
	logs := &wiretest.LogBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	c, err := redisclient.NewWithBreaker(s, log, redisclient.Breaker{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	wire := &redistest.Counter{}
	c.AddHook(wire)
	events := make(chan Event, 1<<16)
	l := New(Config{Schema: "products", Client: c, RequestsPerSecond: rps, Burst: burst, Timeout: timeout,
		OnStoreError: env.OnStoreErrorLocal, Log: log, Observe: func(_ context.Context, ev Event) { events <- ev }})
	return &rig{l: l, c: c, wire: wire, logs: logs, events: events}
}

// take asks for a turn within wait of now.
func (g *rig) take(t testing.TB, wait time.Duration) (time.Duration, bool) {
	t.Helper()
	d, ok, err := g.l.Take(context.Background(), time.Now().Add(wait))
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	return d, ok
}

// counts returns how many of each event came so far, and drops them.
func (g *rig) counts() map[Event]int {
	n := map[Event]int{}
	for {
		select {
		case ev := <-g.events:
			n[ev]++
		default:
			return n
		}
	}
}

// scripts returns the script commands (evalsha, eval) the client sent so
// far, in order, without the handshakes of new connections.
func (g *rig) scripts() []string {
	var out []string
	for _, name := range g.wire.Sent() {
		if name == "evalsha" || name == "eval" {
			out = append(out, name)
		}
	}
	return out
}

// TestGCRA: a quiet limit lets the burst go at once and refuses the next
// call that may not wait; a call that may wait gets the turn one interval
// on, the next two intervals on; a call whose wait is too short for the
// next turn is refused and takes nothing, so the call after it gets that
// turn.
func TestGCRA(t *testing.T) {
	r := redistest.StartRedis(t)
	g := newRig(t, r, r.Prefix, 10, 3, time.Second, nil, nil) // a turn every 100ms
	for i := range 3 {
		if d, ok := g.take(t, 0); !ok || d != 0 {
			t.Fatalf("call %d of the burst: delay %v, %t; want at once", i+1, d, ok)
		}
	}
	if d, ok := g.take(t, 0); ok {
		t.Fatalf("the call after the burst, without a wait: a turn in %v, want none", d)
	}
	first, ok := g.take(t, 10*time.Second)
	if !ok || first <= 0 || first > 100*time.Millisecond {
		t.Fatalf("a call that may wait: %v, %t; want a turn within one interval (100ms)", first, ok)
	}
	second, ok := g.take(t, 10*time.Second)
	if !ok || second <= first || second-first > 100*time.Millisecond || second-first < 50*time.Millisecond {
		t.Fatalf("the next: %v after %v, want about one interval later", second, first)
	}
	if d, ok := g.take(t, second); ok {
		t.Fatalf("a call whose wait is shorter than the next turn got one in %v", d)
	}
	third, ok := g.take(t, 10*time.Second)
	if !ok || third-second > 100*time.Millisecond || third <= second {
		t.Fatalf("after a refused call: a turn in %v after %v, want the turn the refused call left (one interval on)", third, second)
	}
}

// TestSharedByPrefix: limits on two clients with the same key prefix (two
// replicas) share one burst; a third on another prefix has its own.
func TestSharedByPrefix(t *testing.T) {
	r := redistest.StartRedis(t)
	a := newRig(t, r, r.Prefix, 0.001, 5, time.Second, nil, nil)
	b := newRig(t, r, r.Prefix, 0.001, 5, time.Second, nil, nil)
	other := newRig(t, r, r.Prefix+"other:", 0.001, 5, time.Second, nil, nil)
	granted := 0
	for i := range 10 {
		g := a
		if i%2 == 1 {
			g = b
		}
		if _, ok := g.take(t, 0); ok {
			granted++
		}
	}
	if granted != 5 {
		t.Errorf("two replicas on one prefix got %d turns of a burst of 5, want 5", granted)
	}
	for i := range 5 {
		if _, ok := other.take(t, 0); !ok {
			t.Fatalf("call %d on another prefix was refused: it shares nothing", i+1)
		}
	}
}

// TestBatchInOrder: the calls that arrive while a check is in flight go
// together in one round trip once it is back, and get their turns in the
// order they came.
func TestBatchInOrder(t *testing.T) {
	const callers = 6
	r := redistest.StartRedis(t)
	held := make(chan struct{})
	release := make(chan struct{})
	var holding atomic.Bool
	g := newRig(t, r, r.Prefix, 100, 1, 10*time.Second, nil, func() {
		if holding.Load() {
			held <- struct{}{}
			<-release
		}
	})
	queued := make(chan struct{}, callers)
	g.l.queued = func() { queued <- struct{}{} }
	g.take(t, 10*time.Second) // the connection made and the script loaded
	holding.Store(true)
	first := make(chan time.Duration, 1)
	go func() { d, _ := g.take(t, 10*time.Second); first <- d }()
	<-held // the first check is on the wire
	holding.Store(false)
	before := len(g.scripts())
	delays := make([]chan time.Duration, callers)
	for i := range callers {
		delays[i] = make(chan time.Duration, 1)
		go func() {
			d, ok := g.take(t, 10*time.Second)
			if !ok {
				t.Errorf("caller %d got no turn", i)
			}
			delays[i] <- d
		}()
		<-queued // caller i waits behind the check in flight
	}
	close(release)
	prev := <-first
	for i := range callers {
		d := <-delays[i]
		if d <= prev {
			t.Errorf("caller %d: turn in %v, not after the one before it (%v): out of order", i, d, prev)
		}
		prev = d
	}
	if n := len(g.scripts()) - before; n != 1 {
		t.Errorf("the %d queued calls took %d script commands, want 1", callers, n)
	}
}

// TestTimeout: a check whose answer has not come by the limit's timeout
// (a Redis that accepts the connection and never answers) is a store
// error: Take returns ErrStore at the bound, the events are reported, and
// the limit shows fallen back with the cause.
func TestTimeout(t *testing.T) {
	g := newRigOn(t, env.RedisSettings{URL: "redis://" + wiretest.SilentListener(t) + "/0", Timeout: 5 * time.Second}, 100, 10, 50*time.Millisecond, nil)
	_, _, err := g.l.Take(context.Background(), time.Now())
	if !errors.Is(err, ErrStore) {
		t.Fatalf("a check of a Redis that never answers: %v, want ErrStore", err)
	}
	h := g.l.Health()
	if h.Shared || h.StoreErrors != 1 || h.Fallbacks != 1 || !strings.Contains(h.LastError, "timeout") {
		t.Errorf("health %+v, want fallen back once after one store error, the timeout named", h)
	}
	if n := g.counts(); n[StoreError] != 1 || n[FellBack] != 1 || len(n) != 2 {
		t.Errorf("events %v, want a store error and a fall back", n)
	}
}

// clock is a breaker clock that a test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time // guarded by mu
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestRedisDown: Redis stopped: each check is a store error; the limit
// falls back once (one warning, one event) however many checks fail; once
// the client's breaker has paused it, a check costs no dial and no
// command; with Redis back and the pause over, the trial's success is the
// limit's return (one info line, one event), and the limit is shared
// again.
func TestRedisDown(t *testing.T) {
	r := redistest.StartRedis(t)
	clk := &clock{now: time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)}
	g := newRig(t, r, r.Prefix, 1000, 1000, time.Second, clk.Now, nil)
	if _, ok := g.take(t, 0); !ok {
		t.Fatal("no turn with Redis up")
	}
	r.Stop()
	for i := range redisclient.DefaultFailures {
		if _, _, err := g.l.Take(context.Background(), time.Now()); !errors.Is(err, ErrStore) {
			t.Fatalf("check %d with Redis stopped: %v, want ErrStore", i+1, err)
		}
	}
	if got := g.c.Health().State; got != redisclient.Open {
		t.Fatalf("after %d failed checks the client is %s, want open (paused)", redisclient.DefaultFailures, got)
	}
	paused := g.wire.Wire()
	for range 100 {
		if _, _, err := g.l.Take(context.Background(), time.Now()); !errors.Is(err, ErrStore) {
			t.Fatalf("check while paused: %v, want ErrStore", err)
		}
	}
	if got := g.wire.Wire(); got != paused {
		t.Errorf("100 checks while the client is paused cost dials and commands %v -> %v, want none", paused, got)
	}
	h := g.l.Health()
	if h.Shared || h.Fallbacks != 1 || h.StoreErrors != int64(redisclient.DefaultFailures)+100 {
		t.Errorf("health %+v, want fallen back once, %d store errors", h, redisclient.DefaultFailures+100)
	}
	if n := g.counts(); n[FellBack] != 1 || n[StoreError] != redisclient.DefaultFailures+100 || n[Returned] != 0 {
		t.Errorf("events %v, want one fall back, %d store errors", n, redisclient.DefaultFailures+100)
	}
	r.Start()
	clk.advance(redisclient.DefaultPause)
	if _, ok := g.take(t, 0); !ok {
		t.Fatal("the trial with Redis back: no turn")
	}
	if h := g.l.Health(); !h.Shared || h.Fallbacks != 1 {
		t.Errorf("after the return: %+v, want shared, one fall back", h)
	}
	if n := g.counts(); n[Returned] != 1 || len(n) != 1 {
		t.Errorf("events %v, want one return", n)
	}
	out := g.logs.String()
	if n := strings.Count(out, "the shared limit's Redis store failed"); n != 1 {
		t.Errorf("the fall back was logged %d times, want once:\n%s", n, out)
	}
	if n := strings.Count(out, "the shared limit's Redis store answers again"); n != 1 {
		t.Errorf("the return was logged %d times, want once:\n%s", n, out)
	}
}

// TestScriptLost: a Redis that lost the script (SCRIPT FLUSH, a restart)
// gets it again with the check: no store error, and Redis ran one check
// after the restart.
func TestScriptLost(t *testing.T) {
	r := redistest.StartRedis(t)
	g := newRig(t, r, r.Prefix, 1000, 1000, time.Second, nil, nil)
	if _, ok := g.take(t, 0); !ok {
		t.Fatal("no turn")
	}
	r.Stop()
	r.Start() // empty: no script, no key
	if _, ok := g.take(t, 0); !ok {
		t.Fatal("no turn after a restart")
	}
	if h := g.l.Health(); h.StoreErrors != 0 {
		t.Errorf("health %+v, want no store error: the script is sent again on NOSCRIPT", h)
	}
	// After the restart the check goes out first on the pooled connection
	// that Redis closed (it fails at once, and is sent again on a new
	// one: redisclient's retry), then as on the first check.
	if got := strings.Join(g.scripts(), " "); got != "evalsha eval evalsha evalsha eval" {
		t.Errorf("script commands %q, want evalsha then eval (NOSCRIPT) on the first check, and after the restart evalsha on the closed connection, then evalsha and eval", got)
	}
	var stats string
	if err := g.c.Do(context.Background(), func(ctx context.Context, r redis.Cmdable) error {
		var err error
		stats, err = r.Info(ctx, "commandstats").Result()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stats, "cmdstat_evalsha:calls=1,") || !strings.Contains(stats, "cmdstat_eval:calls=1,") {
		t.Errorf("after the restart Redis ran other than one EVALSHA and one EVAL:\n%s", stats)
	}
}

// TestFlightCtx: the checks' context closes Done with DeadlineExceeded
// once the deadline of the check in flight passes; after that check, the
// next gets an open Done; a check that ended before its deadline leaves
// Done open, and its timer, stopped, closes nothing later.
func TestFlightCtx(t *testing.T) {
	c := newFlightCtx()
	c.arm(time.Now().Add(time.Millisecond))
	<-c.Done() // closed by the deadline
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err after the deadline: %v", c.Err())
	}
	c.disarm()
	if c.Err() != nil {
		t.Fatalf("Err of the next check: %v, want nil", c.Err())
	}
	deadline := time.Now().Add(time.Hour)
	c.arm(deadline)
	if d, ok := c.Deadline(); !ok || !d.Equal(deadline) {
		t.Fatalf("Deadline = %v, %t; want %v", d, ok, deadline)
	}
	c.disarm()
	c.expire() // a late fire with no check in flight
	select {
	case <-c.Done():
		t.Fatal("Done closed with no check in flight")
	default:
	}
	c.arm(time.Now().Add(time.Hour))
	c.expire() // a late fire of an earlier check's timer
	select {
	case <-c.Done():
		t.Fatal("Done closed before the deadline of the check in flight")
	default:
	}
	c.disarm()
}
