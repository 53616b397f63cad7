// Package redistest runs a real Redis for a test: its own redis-server
// process on a free loopback port, which the test may stop and start again
// (on the same port) to play a Redis that goes away under load.
//
//	r := redistest.StartRedis(t)   // skips if there is no Redis to run
//	c, err := redisclient.New(r.Settings(), nil)
//	r.Stop()  // ... the store's calls fail ...
//	r.Start() // ... and work again
//
// Where redis-server is not installed, the tests use the server that
// FUSION_TEST_REDIS_URL names (.ci/services.sh starts one), each test under
// a key prefix of its own; such a test cannot Stop it and is skipped when
// it tries. Where there is neither, the test is skipped, unless
// FUSION_TEST_REQUIRE_REDIS=1 (set by CI): then it fails, so that a CI run
// without Redis does not pass by skipping.
//
// For tests only: nothing but _test.go files may import it.
package redistest

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
)

// The environment variables the package reads.
const (
	URLEnv     = "FUSION_TEST_REDIS_URL"     // a running Redis to use where redis-server is absent
	RequireEnv = "FUSION_TEST_REQUIRE_REDIS" // "1": a test that would skip fails instead
)

// startBound bounds each wait for redis-server: to be ready, to exit.
const startBound = 20 * time.Second

// Redis is one test's Redis.
type Redis struct {
	// URL is the server's URL, redis://127.0.0.1:PORT/0 for an own process.
	URL string
	// Prefix is a key prefix of this test's own (Settings uses it), so
	// that the tests that share FUSION_TEST_REDIS_URL's server, or a
	// test's two clients, keep apart what they mean to.
	Prefix string

	t        testing.TB
	bin      string // redis-server's path; "" for an external server
	dir      string // the process's working directory (t.TempDir)
	port     int    // the process's port, kept across Stop and Start
	required bool   // RequireEnv is set: a skip is a failure

	mu     sync.Mutex    // guards proc, exited and log
	proc   *exec.Cmd     // the running process; nil when stopped
	exited chan struct{} // closed when proc has exited
	log    []string      // the process's output lines, for a failure's message
}

// StartRedis starts a Redis for t and stops it when t ends. It skips t
// (fails it, with FUSION_TEST_REQUIRE_REDIS=1) if there is no Redis to run.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	bin := lookPath()
	mode, why := decide(bin, os.Getenv(URLEnv), os.Getenv(RequireEnv) == "1")
	r := &Redis{t: t, bin: bin, dir: t.TempDir(), Prefix: "test:" + randomHex(8) + ":", required: os.Getenv(RequireEnv) == "1"}
	switch mode {
	case skip:
		t.Skip(why)
	case fail:
		t.Fatal(why)
	case external:
		r.URL = os.Getenv(URLEnv)
		return r
	}
	var err error
	for try := 0; try < 10; try++ {
		r.port = freePort(t)
		if err = r.start(); err == nil {
			break
		}
		if !strings.Contains(err.Error(), "in use") {
			t.Fatal(err)
		}
	}
	if err != nil {
		t.Fatalf("no free port for redis-server after 10 tries: %v", err)
	}
	r.URL = fmt.Sprintf("redis://127.0.0.1:%d/0", r.port)
	t.Cleanup(r.halt)
	return r
}

// mode is what StartRedis does.
type mode int

const (
	own      mode = iota // run redis-server
	external             // use URLEnv's server
	skip
	fail
)

// decide chooses between an own process, the external server, a skip and
// a failure, and says why for the last two.
func decide(bin, url string, required bool) (mode, string) {
	switch {
	case bin != "":
		return own, ""
	case url != "":
		return external, ""
	case required:
		return fail, "redis-server is not installed and " + URLEnv + " is unset, yet " + RequireEnv + "=1"
	}
	return skip, "redis-server is not installed and " + URLEnv + " is unset (.ci/services.sh installs and starts one)"
}

// lookPath finds redis-server on PATH or where Debian puts it.
func lookPath() string {
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/bin/redis-server", "/usr/sbin/redis-server", "/usr/local/bin/redis-server"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// Settings returns the settings of a client of this Redis: its URL, the
// test's prefix, and a timeout long enough that a loaded test machine
// does not turn a lookup into a miss; a test that wants the bound sets its
// own.
func (r *Redis) Settings() env.RedisSettings {
	return env.RedisSettings{URL: r.URL, KeyPrefix: r.Prefix, Timeout: 5 * time.Second}
}

// Addr returns the server's host:port.
func (r *Redis) Addr() string {
	u := strings.TrimPrefix(r.URL, "redis://")
	host, _, _ := strings.Cut(u, "/")
	if at := strings.LastIndex(host, "@"); at >= 0 {
		host = host[at+1:]
	}
	return host
}

// Stop stops the server and waits until it has exited: from then on a
// connection to its port is refused. The test is skipped if the server is
// FUSION_TEST_REDIS_URL's (failed, with FUSION_TEST_REQUIRE_REDIS=1).
func (r *Redis) Stop() {
	r.t.Helper()
	r.needOwn("stop")
	if err := r.terminate(); err != nil {
		r.t.Fatal(err)
	}
}

// Start starts the server again on the port it had, empty (it keeps
// nothing on disk).
func (r *Redis) Start() {
	r.t.Helper()
	r.needOwn("start")
	if err := r.start(); err != nil {
		r.t.Fatal(err)
	}
}

func (r *Redis) needOwn(what string) {
	r.t.Helper()
	if r.bin != "" {
		return
	}
	msg := "cannot " + what + " the Redis of " + URLEnv + ": this test needs redis-server installed"
	if r.required {
		r.t.Fatal(msg)
	}
	r.t.Skip(msg)
}

// start runs redis-server on r.port and waits until it says it is ready.
// Only the test's goroutine calls start and terminate.
func (r *Redis) start() error {
	r.mu.Lock()
	running := r.proc != nil
	r.mu.Unlock()
	if running {
		return errors.New("redistest: redis-server already runs")
	}
	cmd := exec.Command(r.bin,
		"--bind", "127.0.0.1", "--port", strconv.Itoa(r.port),
		"--save", "", "--appendonly", "no", "--protected-mode", "yes",
		"--daemonize", "no", "--dir", r.dir, "--logfile", "")
	cmd.Dir = r.dir
	dieWithParent(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redistest: start %s: %w", r.bin, err)
	}
	ready := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			r.mu.Lock()
			r.log = append(r.log, line)
			r.mu.Unlock()
			if !signalled && strings.Contains(line, "Ready to accept connections") {
				signalled = true
				close(ready)
			}
		}
		cmd.Wait() // after the last read, as StdoutPipe wants
		close(exited)
	}()
	var failure error
	select {
	case <-ready:
		r.mu.Lock()
		r.proc, r.exited = cmd, exited
		r.mu.Unlock()
		return nil
	case <-exited:
		failure = fmt.Errorf("redistest: redis-server on port %d exited before it was ready: %s", r.port, r.output())
	case <-time.After(startBound):
		failure = fmt.Errorf("redistest: redis-server on port %d not ready after %v: %s", r.port, startBound, r.output())
	}
	cmd.Process.Kill()
	<-exited
	return failure
}

// terminate ends the process, if one runs, and waits until it has exited.
func (r *Redis) terminate() error {
	r.mu.Lock()
	proc, exited := r.proc, r.exited
	r.proc, r.exited = nil, nil
	r.mu.Unlock()
	if proc == nil {
		return nil
	}
	proc.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		return nil
	case <-time.After(startBound):
	}
	proc.Process.Kill()
	<-exited
	return fmt.Errorf("redistest: redis-server on port %d ignored SIGTERM for %v: %s", r.port, startBound, r.output())
}

// halt is the test's clean-up: the process ends, whatever state it is in.
func (r *Redis) halt() {
	if err := r.terminate(); err != nil {
		r.t.Error(err)
	}
}

// output returns the last lines the process wrote.
func (r *Redis) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	lines := r.log
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// freePort returns a port below the kernel's ephemeral range that nothing
// listens on now. Below the range, because the port must stay free across
// Stop and Start: in the range, any outgoing connection of the tests
// running beside may take it meanwhile.
func freePort(t testing.TB) int {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 21000 {
				low = n
			}
		}
	}
	for range 100 {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(low-20000)))
		if err != nil {
			t.Fatal(err)
		}
		port := 20000 + int(n.Int64())
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		l.Close()
		return port
	}
	t.Fatal("redistest: no free port below the ephemeral range")
	return 0
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
