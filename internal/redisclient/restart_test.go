package redisclient

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fusiongo/transport/internal/testsupport/race"
	"github.com/fusiongo/transport/internal/testsupport/redistest"
)

// TestRestartCostsNoCall: Redis restarted while the client's pool holds
// connections, each of which Redis closed as it stopped: as many calls as
// the pool held connections, through Do and through DoBounded, one at a
// time and all at once, each succeed, count no failure against Redis, and
// Redis ran each command once.
func TestRestartCostsNoCall(t *testing.T) {
	r := redistest.StartRedis(t)
	bounded := func(ctx context.Context, c *Client) error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return c.DoBounded(ctx, func(ctx context.Context, r redis.Cmdable) error { return r.Ping(ctx).Err() })
	}
	for _, tc := range []struct {
		name     string
		call     func(context.Context, *Client) error
		together bool
	}{
		{"Do", ping, false},
		{"DoBounded", bounded, false},
		{"Do/together", ping, true},
		{"DoBounded/together", bounded, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, pooled := restarted(t, r, 4)
			errs := make(chan error, pooled)
			var wg sync.WaitGroup
			for range pooled {
				if tc.together {
					wg.Go(func() { errs <- tc.call(context.Background(), c) })
				} else {
					errs <- tc.call(context.Background(), c)
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatalf("a call after Redis restarted: %v", err)
				}
			}
			if got := c.Health(); got.State != Closed || got.Failures != 0 {
				t.Fatalf("Health after the restart = %+v, want closed, no failure", got)
			}
			if n := commandCalls(t, c, "ping"); n != pooled {
				t.Fatalf("Redis ran PING %d times, want %d", n, pooled)
			}
		})
	}
}

// TestRetrySharesTheBound: the first call after a restart goes out on
// each connection Redis closed, then on a new one (its handshake too),
// and every one of those round trips carries the same deadline: the
// call's, redis.timeout from its start through Do, the caller's through
// DoBounded.
func TestRetrySharesTheBound(t *testing.T) {
	r := redistest.StartRedis(t)
	for _, bounded := range []bool{false, true} {
		t.Run(map[bool]string{false: "Do", true: "DoBounded"}[bounded], func(t *testing.T) {
			c, pooled := restarted(t, r, 2)
			h := &deadlines{}
			c.AddHook(h)
			ctx := context.Background()
			var want time.Time
			var err error
			start := time.Now()
			if bounded {
				var cancel context.CancelFunc
				want = start.Add(time.Minute)
				ctx, cancel = context.WithDeadline(ctx, want)
				defer cancel()
				err = c.DoBounded(ctx, func(ctx context.Context, r redis.Cmdable) error { return r.Ping(ctx).Err() })
			} else {
				err = ping(ctx, c)
			}
			end := time.Now()
			if err != nil {
				t.Fatal(err)
			}
			names, seen := h.get()
			// A PING on each closed connection, then one whose connection is
			// dialed, with its handshake's HELLO (the hook sees the PING
			// before its connection is taken).
			if len(names) != pooled+2 || names[pooled] != "ping" || names[pooled+1] != "hello" {
				t.Fatalf("the call sent %v, want a PING on each of the %d closed connections, then a PING with the new one's HELLO", names, pooled)
			}
			for i, d := range seen {
				if !d.Equal(seen[0]) {
					t.Fatalf("round trip %d (%s) had the deadline %v, the first %v: want one bound for the call", i, names[i], d, seen[0])
				}
			}
			if bounded && !seen[0].Equal(want) {
				t.Fatalf("DoBounded's round trips had the deadline %v, want the caller's %v", seen[0], want)
			}
			if !bounded && (seen[0].Before(start.Add(c.Timeout())) || seen[0].After(end.Add(c.Timeout()))) {
				t.Fatalf("Do's round trips had the deadline %v, want redis.timeout (%v) from the call's start, between %v and %v",
					seen[0], c.Timeout(), start.Add(c.Timeout()), end.Add(c.Timeout()))
			}
		})
	}
}

// deadlines is a go-redis hook that records each command's name and its
// context's deadline.
type deadlines struct {
	mu    sync.Mutex
	names []string    // guarded by mu
	seen  []time.Time // guarded by mu
}

func (h *deadlines) get() ([]string, []time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.names), slices.Clone(h.seen)
}

func (h *deadlines) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *deadlines) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		d, _ := ctx.Deadline()
		h.mu.Lock()
		h.names, h.seen = append(h.names, cmd.Name()), append(h.seen, d)
		h.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (h *deadlines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// restarted returns a client of r (closed when t ends) whose pool holds
// the n+1 connections of openConns, and how many, then restarts r: each
// of them is closed.
func restarted(t *testing.T, r *redistest.Redis, n int) (*Client, int) {
	t.Helper()
	c, err := New(r.Settings(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	pooled := openConns(t, c, n)
	r.Stop()
	r.Start()
	return c, pooled
}

// openConns leaves n+1 connections in c's pool: n BLPOPs held by Redis at
// once, then released by one LPUSH (on the n+1st). It returns how many
// the pool holds.
func openConns(t *testing.T, c *Client, n int) int {
	t.Helper()
	ctx := context.Background()
	list := c.Prefix() + "hold"
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			errs <- c.Do(ctx, func(ctx context.Context, r redis.Cmdable) error { return r.BLPop(ctx, 0, list).Err() })
		})
	}
	// Redis says how many of its clients wait in a blocking command.
	for try := 0; blockedClients(t, c) != n; try++ {
		if try == 100000 {
			t.Fatalf("Redis never held %d BLPOPs", n)
		}
	}
	values := make([]any, n)
	for i := range values {
		values[i] = i
	}
	if err := c.Do(ctx, func(ctx context.Context, r redis.Cmdable) error { return r.LPush(ctx, list, values...).Err() }); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("BLPOP: %v", err)
		}
	}
	st := c.rdb.PoolStats()
	if int(st.TotalConns) != n+1 || int(st.IdleConns) != n+1 {
		t.Fatalf("the pool holds %d connections, %d idle; want %d", st.TotalConns, st.IdleConns, n+1)
	}
	return n + 1
}

// blockedClients returns INFO's blocked_clients.
func blockedClients(t *testing.T, c *Client) int {
	t.Helper()
	return infoField(t, c, "clients", "blocked_clients:")
}

// commandCalls returns how many times Redis ran the command name since it
// started (INFO commandstats).
func commandCalls(t *testing.T, c *Client, name string) int {
	t.Helper()
	return infoField(t, c, "commandstats", "cmdstat_"+name+":calls=")
}

// infoField returns the number after prefix in INFO section's answer; 0
// if the answer has no such line.
func infoField(t *testing.T, c *Client, section, prefix string) int {
	t.Helper()
	var info string
	err := c.Do(context.Background(), func(ctx context.Context, r redis.Cmdable) error {
		var err error
		info, err = r.Info(ctx, section).Result()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			digits, _, _ := strings.Cut(strings.TrimSpace(rest), ",")
			n, err := strconv.Atoi(digits)
			if err != nil {
				t.Fatalf("INFO %s: %q: %v", section, line, err)
			}
			return n
		}
	}
	return 0
}

// TestRoundTripAllocs: a round trip on a pooled connection allocates what
// go-redis's command and answer take (a PING: the command, its arguments,
// the answer's text) and nothing of the client's: no context, no timer, no
// health check of the connection.
func TestRoundTripAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates, and drops pooled items")
	}
	r := redistest.StartRedis(t)
	c, err := New(r.Settings(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := ping(ctx, c); err != nil {
		t.Fatal(err)
	}
	bare := testing.AllocsPerRun(1000, func() {
		if err := c.rdb.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	})
	through := testing.AllocsPerRun(1000, func() {
		if err := ping(ctx, c); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("a PING allocates %v through Do, %v through go-redis alone", through, bare)
	// go-redis's own: NewStatusCmd's command and arguments, and the
	// answer's text.
	if through > 3 {
		t.Errorf("a PING through Do allocates %v (go-redis's Ping alone, on the client's connections, %v); want at most 3", through, bare)
	}
}
