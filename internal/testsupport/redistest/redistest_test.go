package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// do sends one command (inline form) to addr and returns the first line
// of the answer.
func do(t *testing.T, addr, cmd string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(c, "%s\r\n", cmd); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return strings.TrimSpace(line)
}

func refused(t *testing.T, addr string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections", addr)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial %s: %v, want connection refused", addr, err)
	}
}

// TestStopStart: the server answers, holds what it is given, refuses
// connections once stopped, and answers again after Start on the same
// port, empty (nothing is kept on disk).
func TestStopStart(t *testing.T) {
	r := StartRedis(t)
	addr := r.Addr()
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("Addr() = %q, want a loopback address", addr)
	}
	if got := do(t, addr, "SET k v"); got != "+OK" {
		t.Fatalf("SET: %q", got)
	}
	if got := do(t, addr, "EXISTS k"); got != ":1" {
		t.Fatalf("EXISTS after SET: %q", got)
	}
	r.Stop()
	refused(t, addr)
	r.Start()
	if r.Addr() != addr {
		t.Fatalf("Start moved the server from %s to %s", addr, r.Addr())
	}
	if got := do(t, addr, "EXISTS k"); got != ":0" {
		t.Fatalf("EXISTS after a restart: %q, want :0 (no persistence)", got)
	}
	if got := do(t, addr, "CONFIG GET save"); got != "*2" {
		t.Fatalf("CONFIG GET save: %q", got)
	}
}

// TestCleanup: the server of a test is gone when the test ends.
func TestCleanup(t *testing.T) {
	var addr string
	t.Run("inner", func(t *testing.T) {
		addr = StartRedis(t).Addr()
		if got := do(t, addr, "PING"); got != "+PONG" {
			t.Fatalf("PING: %q", got)
		}
	})
	if addr == "" {
		t.Skip("the inner test skipped")
	}
	refused(t, addr)
}

// TestPrefixes: two tests' Redis never share a key prefix, and Settings
// carries the URL and the prefix.
func TestPrefixes(t *testing.T) {
	a, b := StartRedis(t), StartRedis(t)
	if a.Prefix == b.Prefix || !strings.HasSuffix(a.Prefix, ":") {
		t.Fatalf("prefixes %q and %q", a.Prefix, b.Prefix)
	}
	if s := a.Settings(); s.URL != a.URL || s.KeyPrefix != a.Prefix || s.Timeout <= 0 {
		t.Fatalf("Settings() = %+v", s)
	}
	if a.Addr() == b.Addr() {
		t.Fatalf("two servers on %s", a.Addr())
	}
}

// TestDecide: an installed redis-server is run; else the URL's server is
// used; else the test skips, or fails when Redis is required.
func TestDecide(t *testing.T) {
	cases := []struct {
		bin, url string
		required bool
		want     mode
	}{
		{"/usr/bin/redis-server", "", false, own},
		{"/usr/bin/redis-server", "redis://127.0.0.1:6379/0", true, own},
		{"", "redis://127.0.0.1:6379/0", false, external},
		{"", "redis://127.0.0.1:6379/0", true, external},
		{"", "", false, skip},
		{"", "", true, fail},
	}
	for _, c := range cases {
		got, why := decide(c.bin, c.url, c.required)
		if got != c.want {
			t.Errorf("decide(%q, %q, %v) = %v, want %v", c.bin, c.url, c.required, got, c.want)
		}
		if (got == skip || got == fail) != (why != "") {
			t.Errorf("decide(%q, %q, %v): reason %q", c.bin, c.url, c.required, why)
		}
	}
}
