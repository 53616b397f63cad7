package redisclient

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/redistest"
	"github.com/fusiongo/transport/internal/testsupport/testpki"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// secret is the password of the URLs below; secretWritten is how the URLs
// write it (percent-encoded).
const (
	secret        = "s3cr3t@pass"
	secretWritten = "s3cr3t%40pass"
)

// assertHidden fails t if text holds the password in either form.
func assertHidden(t *testing.T, what, text string) {
	t.Helper()
	for _, s := range []string{secret, secretWritten, "s3cr3t"} {
		if strings.Contains(text, s) {
			t.Errorf("%s shows the password (%q): %s", what, s, text)
		}
	}
}

// TestNewRefuses: each bad setting is refused by its key, the cause
// wrapped, and no error shows the URL's password.
func TestNewRefuses(t *testing.T) {
	dir := t.TempDir()
	pki := testpki.New(t, dir)
	cert, key := pki.ClientFiles(t, "gateway")
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	const good = "rediss://user:" + secretWritten + "@127.0.0.1:6379/0"
	cases := []struct {
		name  string
		s     env.RedisSettings
		want  []string // in the error's text
		cause error    // wrapped, if not nil
	}{
		{"no url", env.RedisSettings{}, []string{"redis.url"}, nil},
		{"bad scheme", env.RedisSettings{URL: "http://user:" + secretWritten + "@h:1"}, []string{"redis.url", `"http"`}, nil},
		{"unparsable", env.RedisSettings{URL: "redis://user:" + secretWritten + "@h:port"}, []string{"redis.url"}, nil},
		{"bad db", env.RedisSettings{URL: "redis://user:" + secretWritten + "@h:1/x"}, []string{"redis.url", "database"}, nil},
		{"a timeout in the url", env.RedisSettings{URL: "redis://user:" + secretWritten + "@h:1/0?read_timeout=1s"}, []string{"redis.url", "read_timeout", "redis.timeout"}, nil},
		{"a pool size in the url", env.RedisSettings{URL: "redis://h:1/0?pool_size=3"}, []string{"pool_size", "redis.pool_size"}, nil},
		{"negative timeout", env.RedisSettings{URL: good, Timeout: -time.Second}, []string{"redis.timeout"}, nil},
		{"negative pool", env.RedisSettings{URL: good, PoolSize: -1}, []string{"redis.pool_size"}, nil},
		{"tls files without tls", env.RedisSettings{URL: "redis://user:" + secretWritten + "@h:1", TLS: env.RedisTLSSettings{CAFile: pki.CAFile}}, []string{"redis.tls.ca_file", "rediss"}, nil},
		{"missing ca", env.RedisSettings{URL: good, TLS: env.RedisTLSSettings{CAFile: missing}}, []string{"redis.tls.ca_file", missing}, fs.ErrNotExist},
		{"ca not pem", env.RedisSettings{URL: good, TLS: env.RedisTLSSettings{CAFile: notPEM}}, []string{"redis.tls.ca_file", notPEM}, nil},
		{"cert without key", env.RedisSettings{URL: good, TLS: env.RedisTLSSettings{CertFile: cert}}, []string{"redis.tls.cert_file", "redis.tls.key_file"}, nil},
		{"key without cert", env.RedisSettings{URL: good, TLS: env.RedisTLSSettings{KeyFile: key}}, []string{"redis.tls.key_file", "redis.tls.cert_file"}, nil},
		{"missing key", env.RedisSettings{URL: good, TLS: env.RedisTLSSettings{CertFile: cert, KeyFile: missing}}, []string{"redis.tls.key_file", missing}, fs.ErrNotExist},
		{"key of another cert", env.RedisSettings{URL: good, TLS: env.RedisTLSSettings{CertFile: cert, KeyFile: notPEM}}, []string{"redis.tls.cert_file"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl, err := New(c.s, nil)
			if err == nil {
				cl.Close()
				t.Fatal("New accepted it")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
			if c.cause != nil && !errors.Is(err, c.cause) {
				t.Errorf("error %q does not wrap %v", err, c.cause)
			}
			assertHidden(t, "the error", err.Error())
		})
	}
	// The control: the same files, right, are taken.
	cl, err := New(env.RedisSettings{URL: good, TLS: env.RedisTLSSettings{CAFile: pki.CAFile, CertFile: cert, KeyFile: key}}, nil)
	if err != nil {
		t.Fatalf("good settings refused: %v", err)
	}
	cl.Close()
}

// TestDefaults: a zero timeout and prefix take the defaults.
func TestDefaults(t *testing.T) {
	c, err := New(env.RedisSettings{URL: "redis://127.0.0.1:1/0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Prefix() != env.DefaultRedisKeyPrefix || c.Timeout() != env.DefaultRedisTimeout {
		t.Fatalf("prefix %q, timeout %v", c.Prefix(), c.Timeout())
	}
}

// TestTLS: a rediss:// client verifies the server with redis.tls.ca_file
// alone (the test CA is in no system store) and presents the client
// certificate of redis.tls.cert_file and key_file, which the server
// requires.
func TestTLS(t *testing.T) {
	pki := testpki.New(t, t.TempDir())
	f := startFake(t, pki.ServerConfig(t, "127.0.0.1"), plainAnswers)
	cert, key := pki.ClientFiles(t, "gateway")
	c, err := New(env.RedisSettings{URL: "rediss://" + f.addr + "/0", Timeout: 5 * time.Second,
		TLS: env.RedisTLSSettings{CAFile: pki.CAFile, CertFile: cert, KeyFile: key}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := ping(context.Background(), c); err != nil {
		t.Fatalf("PING over TLS: %v", err)
	}
	f.mu.Lock()
	peers := f.peers
	f.mu.Unlock()
	if len(peers) == 0 || len(peers[0].PeerCertificates) == 0 || peers[0].PeerCertificates[0].Subject.CommonName != "gateway" {
		t.Fatalf("the server saw no client certificate of gateway: %+v", peers)
	}
	if !slices.Contains(f.commands(), "PING") {
		t.Fatalf("the server saw %v, no PING", f.commands())
	}

	// Without the CA file, the server is not trusted: the file was used.
	c2, err := New(env.RedisSettings{URL: "rediss://" + f.addr + "/0", Timeout: 5 * time.Second,
		TLS: env.RedisTLSSettings{CertFile: cert, KeyFile: key}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := ping(context.Background(), c2); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("PING to an untrusted server: %v, want a certificate error", err)
	}
}

// TestPasswordNeverShown: a server whose every error quotes the password
// it was sent (as a careless proxy might): the client's errors, its log
// lines (the pause included) and Health hold it nowhere, yet the password
// did go to the server.
func TestPasswordNeverShown(t *testing.T) {
	f := startFake(t, nil, func(cmd []string) string {
		return "-ERR nope: " + strings.Join(cmd, " ") + "\r\n"
	})
	var logs wiretest.LogBuffer
	c, err := NewWithBreaker(env.RedisSettings{URL: "redis://user:" + secretWritten + "@" + f.addr + "/0", Timeout: 5 * time.Second},
		logger(&logs), Breaker{Now: newClock().Now})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var errs []string
	for range DefaultFailures + 1 {
		err := ping(context.Background(), c)
		if err == nil {
			t.Fatal("PING succeeded on a server that refuses everything")
		}
		errs = append(errs, err.Error())
	}
	sent := false
	f.mu.Lock()
	for _, cmd := range f.cmds {
		sent = sent || slices.Contains(cmd, secret)
	}
	f.mu.Unlock()
	if !sent {
		t.Fatalf("the server never got the password (it saw %v): the test proves nothing", f.commands())
	}
	if !strings.Contains(errs[0], "xxxxx") {
		t.Errorf("the first error does not show where the password was: %s", errs[0])
	}
	for _, e := range errs {
		assertHidden(t, "an error", e)
	}
	if !strings.Contains(logs.String(), "paused") {
		t.Errorf("no pause logged: %s", logs.String())
	}
	assertHidden(t, "the log", logs.String())
	h := c.Health()
	if h.State != Open || h.LastError == "" {
		t.Errorf("Health = %+v, want open with the last error", h)
	}
	assertHidden(t, "Health", h.LastError)
}

// TestScrubKeepsIs: an error whose text held the password still answers
// errors.Is as its cause did (a timeout stays a timeout) without
// unwrapping to the text.
func TestScrubKeepsIs(t *testing.T) {
	cause := errors.Join(context.DeadlineExceeded, errors.New("auth "+secret+" refused"))
	err := scrub(cause, []string{secret})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("scrubbed error is not DeadlineExceeded")
	}
	if errors.Unwrap(err) != nil {
		t.Errorf("scrubbed error unwraps to its cause")
	}
	assertHidden(t, "scrubbed", err.Error())
	if plain := errors.New("no secret here"); scrub(plain, []string{secret}) != plain {
		t.Errorf("an error without a secret was replaced")
	}
}

// TestTimeoutBoundsEachCall: against a server that accepts and never
// answers, a call ends with a timeout error once redis.timeout has passed,
// without the caller giving any deadline, and is not retried.
func TestTimeoutBoundsEachCall(t *testing.T) {
	h, err := onePing(t, wiretest.SilentListener(t), 50*time.Millisecond)
	var ne net.Error
	if err == nil || !(errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()) {
		t.Fatalf("PING to a silent server: %v, want a timeout", err)
	}
	// One dial, and on it the handshake (HELLO, which timed out); the
	// PING itself never went: nothing was tried twice.
	if got, names := h.Wire(), h.Sent(); got[0] != 1 || !slices.Equal(names, []string{"ping", "hello"}) {
		t.Fatalf("dials %d, commands %v; want 1 dial, ping then hello (no retry)", got[0], names)
	}
}

// TestBreaker, against a real Redis that stops: failures below the
// threshold leave it closed; the fifth opens it, logged once; then calls
// fail at once, wrapping ErrStoreUnavailable, with nothing on the wire;
// after the pause one trial goes out while the others are refused; a
// failed trial pauses again without a second log line; a good one closes
// it, logged once.
func TestBreaker(t *testing.T) {
	r := redistest.StartRedis(t)
	clk := newClock()
	var logs wiretest.LogBuffer
	c, err := NewWithBreaker(r.Settings(), logger(&logs), Breaker{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// held gets each command as it is about to go while hold is set, and
	// the command waits for hold to close.
	held := make(chan struct{}, 4)
	var hold atomic.Pointer[chan struct{}]
	h := &redistest.Counter{Before: func(string) {
		if ch := hold.Load(); ch != nil {
			held <- struct{}{}
			<-*ch
		}
	}}
	c.AddHook(h)
	ctx := context.Background()
	if err := ping(ctx, c); err != nil {
		t.Fatalf("PING: %v", err)
	}
	r.Stop()
	for i := range DefaultFailures {
		if got := c.Health(); got.State != Closed || got.Failures != i {
			t.Fatalf("after %d failures: %+v", i, got)
		}
		err := ping(ctx, c)
		if err == nil || errors.Is(err, ErrStoreUnavailable) {
			t.Fatalf("call %d to a stopped Redis: %v, want its own failure", i+1, err)
		}
	}
	if got := c.Health(); got.State != Open || got.Failures != DefaultFailures || !got.Since.Equal(clk.Now()) || got.LastError == "" {
		t.Fatalf("after %d failures: %+v, want open since now", DefaultFailures, got)
	}
	before := h.Wire()
	for range 3 {
		if err := ping(ctx, c); !errors.Is(err, ErrStoreUnavailable) {
			t.Fatalf("call while open: %v, want ErrStoreUnavailable", err)
		}
	}
	clk.advance(DefaultPause - time.Nanosecond)
	if err := ping(ctx, c); !errors.Is(err, ErrStoreUnavailable) {
		t.Fatalf("call before the pause is over: %v", err)
	}
	if got := h.Wire(); got != before {
		t.Fatalf("refused calls reached the wire: dials, commands %v then %v", before, got)
	}

	// The pause is over: one trial, which fails (Redis still stopped).
	clk.advance(time.Nanosecond)
	if err := ping(ctx, c); err == nil || errors.Is(err, ErrStoreUnavailable) {
		t.Fatalf("the trial: %v, want Redis's own failure", err)
	}
	if got := h.Wire(); got[1] != before[1]+1 {
		t.Fatalf("the trial sent %d commands, want 1", got[1]-before[1])
	}
	if got := c.Health(); got.State != Open || !got.Since.Equal(clk.Now()) {
		t.Fatalf("after a failed trial: %+v, want open again since now", got)
	}
	if err := ping(ctx, c); !errors.Is(err, ErrStoreUnavailable) {
		t.Fatalf("call after a failed trial: %v", err)
	}

	// Redis is back; after the pause, the trial is held on the wire while
	// another call is refused, then succeeds and closes the breaker.
	r.Start()
	clk.advance(DefaultPause)
	release := make(chan struct{})
	hold.Store(&release)
	trial := make(chan error, 1)
	go func() { trial <- ping(ctx, c) }()
	<-held
	if got := c.Health(); got.State != HalfOpen {
		t.Fatalf("with the trial out: %+v, want half-open", got)
	}
	if err := ping(ctx, c); !errors.Is(err, ErrStoreUnavailable) {
		t.Fatalf("call beside the trial: %v, want ErrStoreUnavailable", err)
	}
	hold.Store(nil)
	close(release)
	if err := <-trial; err != nil {
		t.Fatalf("the trial against a running Redis: %v", err)
	}
	if got := c.Health(); got.State != Closed || got.Failures != 0 {
		t.Fatalf("after a good trial: %+v, want closed", got)
	}
	if err := ping(ctx, c); err != nil {
		t.Fatalf("call after the return: %v", err)
	}
	out := logs.String()
	if n := strings.Count(out, "level=WARN"); n != 1 {
		t.Errorf("%d warnings, want 1 (the pause):\n%s", n, out)
	}
	if n := strings.Count(out, "level=INFO"); n != 1 || !strings.Contains(out, "answers again") {
		t.Errorf("%d info lines, want 1 (the return):\n%s", n, out)
	}
}

// TestCallerGivingUpIsNoFailure: calls whose own context has ended fail,
// but do not count against Redis.
func TestCallerGivingUpIsNoFailure(t *testing.T) {
	r := redistest.StartRedis(t)
	c, err := New(r.Settings(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 2 * DefaultFailures {
		if err := ping(ctx, c); !errors.Is(err, context.Canceled) {
			t.Fatalf("call with an ended context: %v", err)
		}
	}
	if got := c.Health(); got.State != Closed || got.Failures != 0 {
		t.Fatalf("Health = %+v, want closed with no failure", got)
	}
	if err := ping(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}

// TestNilIsSuccess: a key that does not exist (redis.Nil) is an answer,
// not a failure.
func TestNilIsSuccess(t *testing.T) {
	r := redistest.StartRedis(t)
	c, err := New(r.Settings(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 2 * DefaultFailures {
		err := c.Do(context.Background(), func(ctx context.Context, rc redis.Cmdable) error {
			return rc.Get(ctx, c.Prefix()+"absent").Err()
		})
		if !errors.Is(err, redis.Nil) {
			t.Fatalf("GET of an absent key: %v, want redis.Nil", err)
		}
	}
	if got := c.Health(); got.State != Closed || got.Failures != 0 {
		t.Fatalf("Health = %+v", got)
	}
}

// TestNoRetry: a server that closes each connection at once, and a port
// that refuses, cost a call one dial: go-redis's retries of commands (3 by
// default) and of dials (5) are off, so a failing Redis fails the call at
// once.
func TestNoRetry(t *testing.T) {
	refusing, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusing.Close()
	hangingUp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hangingUp.Close()
	go func() {
		for {
			c, err := hangingUp.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	for name, addr := range map[string]string{"refused": refusing.Addr().String(), "hung up": hangingUp.Addr().String()} {
		h, err := onePing(t, addr, 5*time.Second)
		if err == nil {
			t.Fatalf("%s: PING succeeded", name)
		}
		if got := h.Wire(); got[0] != 1 {
			t.Errorf("%s: %d dials for one call, want 1 (commands %v)", name, got[0], h.Sent())
		}
	}
}

// onePing sends one PING through a new client of addr with timeout, and
// returns what it cost on the wire and its error.
func onePing(t *testing.T, addr string, timeout time.Duration) (*redistest.Counter, error) {
	t.Helper()
	c, err := New(env.RedisSettings{URL: "redis://" + addr + "/0", Timeout: timeout}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := &redistest.Counter{}
	c.AddHook(h)
	return h, ping(context.Background(), c)
}

// TestScrubbedWhenCallerGaveUp: an error that quotes the password is
// scrubbed on each path of Do, the one where the caller's own context
// ended (no failure counted) as well.
func TestScrubbedWhenCallerGaveUp(t *testing.T) {
	c, err := New(env.RedisSettings{URL: "redis://user:" + secretWritten + "@127.0.0.1:1/0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, gaveUp := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		err := c.Do(ctx, func(context.Context, redis.Cmdable) error {
			if gaveUp {
				cancel()
			}
			return errors.New("WRONGPASS " + secret)
		})
		cancel()
		if err == nil {
			t.Fatal("Do returned no error")
		}
		assertHidden(t, "the error", err.Error())
	}
}
