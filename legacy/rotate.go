package legacy

import (
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fusiongo/transport/env"
)

// rotator is the shared transport of the legacy path, replaced every
// handler lifetime as IHttpClientFactory replaces its handlers: requests go
// to the current generation, and a retired generation closes its idle
// connections once its last in-flight request (body included) ends.
type rotator struct {
	log   *slog.Logger
	proxy func(*http.Request) (*url.URL, error)

	cur      atomic.Pointer[generation]
	mu       sync.Mutex // guards the fields below and rotation
	settings env.Settings
	lifetime time.Duration
	closed   bool
}

type generation struct {
	tr       *http.Transport
	born     time.Time
	inflight atomic.Int64
	retired  atomic.Bool
}

func newRotator(cfg env.Config, proxy func(*http.Request) (*url.URL, error), log *slog.Logger) *rotator {
	r := &rotator{
		log:      log,
		proxy:    proxy,
		settings: cfg.EffectiveDefaults(),
		lifetime: env.Bound(cfg.EffectiveLegacy().HandlerLifetime),
	}
	r.cur.Store(r.newGeneration())
	return r
}

// newGeneration builds a transport with Go's DefaultTransport settings,
// except where the configuration's defaults say otherwise. r.mu is held or
// r is not shared yet.
func (r *rotator) newGeneration() *generation {
	s := r.settings
	keepAlive := env.Bound(s.KeepAlive)
	if s.KeepAlive < 0 {
		keepAlive = -1 // net.Dialer: negative turns keep-alive probes off
	}
	dialer := &net.Dialer{Timeout: env.Bound(s.ConnectTimeout), KeepAlive: keepAlive}
	return &generation{
		born: time.Now(),
		tr: &http.Transport{
			Proxy:                 r.proxy,
			DialContext:           dialer.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          100,
			MaxConnsPerHost:       env.Limit(s.MaxConnsPerHost),
			MaxIdleConnsPerHost:   maxIdle(s.MaxIdleConnsPerHost),
			IdleConnTimeout:       env.Bound(s.IdleConnTimeout),
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: 1 * time.Second,
		},
	}
}

// maxIdle maps max_idle_conns_per_host onto the transport: unset keeps
// Go's default of 2, NoLimit (0 in files) keeps every idle connection.
func maxIdle(n int) int {
	if n == env.NoLimit {
		return math.MaxInt32
	}
	return n
}

func (r *rotator) RoundTrip(req *http.Request) (*http.Response, error) {
	g := r.current()
	if g == nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, ErrClosed
	}
	g.inflight.Add(1)
	resp, err := g.tr.RoundTrip(req)
	if err != nil {
		g.release()
		return nil, err
	}
	resp.Body = &trackedBody{rc: resp.Body, g: g}
	return resp, nil
}

// current returns the generation to use, rotating first if the current one
// has outlived the handler lifetime.
func (r *rotator) current() *generation {
	g := r.cur.Load()
	if g == nil || r.lifetime <= 0 || time.Since(g.born) < r.lifetime {
		return g
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if g = r.cur.Load(); g != nil && time.Since(g.born) >= r.lifetime {
		g = r.rotateLocked()
	}
	return g
}

// rotateLocked retires the current generation and starts a new one.
func (r *rotator) rotateLocked() *generation {
	next := r.newGeneration()
	if old := r.cur.Swap(next); old != nil {
		old.retire()
	}
	r.log.Debug("legacy transport rotated", "handler_lifetime", r.lifetime)
	return next
}

// reconfigure applies the shared transport settings of cfg, rotating now if
// they changed. It reports whether it rotated.
func (r *rotator) reconfigure(cfg env.Config) bool {
	settings := cfg.EffectiveDefaults()
	lifetime := env.Bound(cfg.EffectiveLegacy().HandlerLifetime)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || (sharedSettings(settings).Equal(sharedSettings(r.settings)) && lifetime == r.lifetime) {
		return false
	}
	r.settings, r.lifetime = settings, lifetime
	r.rotateLocked()
	return true
}

// sharedSettings keeps the settings the shared transport is built from;
// the others are the sockets path's or act per request.
func sharedSettings(s env.Settings) env.Settings {
	return env.Settings{
		ConnectTimeout:      s.ConnectTimeout,
		IdleConnTimeout:     s.IdleConnTimeout,
		MaxConnsPerHost:     s.MaxConnsPerHost,
		MaxIdleConnsPerHost: s.MaxIdleConnsPerHost,
		KeepAlive:           s.KeepAlive,
	}
}

func (r *rotator) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if old := r.cur.Swap(nil); old != nil {
		old.retire()
	}
}

// retire marks g as replaced and closes its idle connections at once.
// CloseIdleConnections also makes the transport close each connection that
// turns idle later, as long as no new request arrives on it; release calls
// it again when the last request ends, for the one that raced retirement.
func (g *generation) retire() {
	g.retired.Store(true)
	g.tr.CloseIdleConnections()
}

func (g *generation) release() {
	if g.inflight.Add(-1) == 0 && g.retired.Load() {
		g.tr.CloseIdleConnections()
	}
}

// trackedBody counts its request in flight until the body is read to the
// end or closed.
type trackedBody struct {
	rc   io.ReadCloser
	g    *generation
	done atomic.Bool
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.finish()
	}
	return n, err
}

func (b *trackedBody) Close() error {
	err := b.rc.Close()
	b.finish()
	return err
}

func (b *trackedBody) finish() {
	if b.done.CompareAndSwap(false, true) {
		b.g.release()
	}
}
