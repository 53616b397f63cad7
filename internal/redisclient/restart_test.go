package redisclient

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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
			c, err := New(r.Settings(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			pooled := openConns(t, c, 4)
			r.Stop()
			r.Start()
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
