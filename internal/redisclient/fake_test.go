package redisclient

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// fakeRedis is a loopback server that speaks just enough RESP for go-redis:
// it reads each command (an array of bulk strings) and writes what answer
// returns for it (a whole RESP reply). It records what it saw.
type fakeRedis struct {
	addr string

	mu    sync.Mutex
	cmds  [][]string            // guarded by mu: every command, in order
	peers []tls.ConnectionState // guarded by mu: the TLS state of each connection
}

// startFake starts a fakeRedis (TLS if cfg is not nil) and closes it when
// the test ends.
func startFake(t *testing.T, cfg *tls.Config, answer func(cmd []string) string) *fakeRedis {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if cfg != nil {
		l = tls.NewListener(l, cfg)
	}
	f := &fakeRedis{addr: l.Addr().String()}
	var wg sync.WaitGroup
	conns := make(chan net.Conn, 64)
	t.Cleanup(func() {
		l.Close()
		close(conns)
		for c := range conns {
			c.Close()
		}
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			select {
			case conns <- c:
			default:
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				f.serve(c, answer)
			}()
		}
	}()
	return f
}

func (f *fakeRedis) serve(c net.Conn, answer func([]string) string) {
	if tc, ok := c.(*tls.Conn); ok {
		if tc.Handshake() != nil {
			return
		}
		f.mu.Lock()
		f.peers = append(f.peers, tc.ConnectionState())
		f.mu.Unlock()
	}
	r := bufio.NewReader(c)
	for {
		cmd, err := readCommand(r)
		if err != nil {
			return
		}
		f.mu.Lock()
		f.cmds = append(f.cmds, cmd)
		f.mu.Unlock()
		if _, err := io.WriteString(c, answer(cmd)); err != nil {
			return
		}
	}
}

// readCommand reads one RESP array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(line, "*") {
		return nil, fmt.Errorf("not an array: %q", line)
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil {
		return nil, err
	}
	cmd := make([]string, n)
	for i := range cmd {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(line[1:]))
		if err != nil {
			return nil, err
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		cmd[i] = string(buf[:size])
	}
	return cmd, nil
}

// commands returns the names of the commands the server saw.
func (f *fakeRedis) commands() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var names []string
	for _, c := range f.cmds {
		names = append(names, strings.ToUpper(c[0]))
	}
	return names
}

// plainAnswers answers HELLO with an error (so go-redis speaks RESP2 and
// sends no credentials in it), PING with PONG, and anything else with OK.
func plainAnswers(cmd []string) string {
	switch strings.ToUpper(cmd[0]) {
	case "HELLO":
		return "-ERR unknown command 'HELLO'\r\n"
	case "PING":
		return "+PONG\r\n"
	}
	return "+OK\r\n"
}

// clock is a breaker clock that moves only when told.
type clock struct {
	mu  sync.Mutex
	now time.Time // guarded by mu
}

func newClock() *clock { return &clock{now: time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)} }

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

// logger returns a logger writing text lines to b.
func logger(b *wiretest.LogBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// ping is one round trip through c.
func ping(ctx context.Context, c *Client) error {
	return c.Do(ctx, func(ctx context.Context, r redis.Cmdable) error { return r.Ping(ctx).Err() })
}
