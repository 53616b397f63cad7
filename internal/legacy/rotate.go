package legacy

import (
	"context"
	"errors"
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
	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/setting"
)

// rotator is a shared transport of the legacy path, replaced every handler
// lifetime: requests go to the current generation, and a retired
// generation closes its idle connections once its last in-flight request
// (body included) ends. Its settings and lifetime never change: a reload
// that changes them opens a new rotator (Backend.Open) and the old one is
// closed when its last Transport drains.
type rotator struct {
	key   *key                                  // immutable
	log   *slog.Logger                          // immutable
	proxy func(*http.Request) (*url.URL, error) // immutable

	cur  atomic.Pointer[generation] // nil once closed; swapped under mu
	mu   sync.Mutex                 // serialises rotation and close
	refs int                        // Transports open on it; guarded by Backend.mu
}

// generation is one http.Transport of a rotator.
type generation struct {
	tr       *http.Transport // immutable
	dialer   *net.Dialer     // immutable
	born     time.Time       // immutable
	inflight atomic.Int64    // requests sent on tr whose body is not yet done
	retired  atomic.Bool     // set once, when tr was replaced or its rotator closed
}

func newRotator(k *key, proxy func(*http.Request) (*url.URL, error), log *slog.Logger) *rotator {
	r := &rotator{key: k, log: log, proxy: proxy}
	r.cur.Store(r.newGeneration())
	return r
}

// newGeneration builds a transport with Go's DefaultTransport settings,
// except where the configuration's defaults say otherwise.
func (r *rotator) newGeneration() *generation {
	s := r.key.shared
	g := &generation{born: time.Now(), dialer: backend.Dialer(s)}
	g.tr = &http.Transport{
		Proxy:                 r.proxy,
		DialContext:           g.dial,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxConnsPerHost:       setting.Limit(s.MaxConnsPerHost),
		MaxIdleConnsPerHost:   maxIdle(s.MaxIdleConnsPerHost),
		IdleConnTimeout:       setting.Bound(s.IdleConnTimeout),
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: 1 * time.Second,
		// 0 (NoLimit) leaves net/http's own 10 MiB.
		MaxResponseHeaderBytes: int64(setting.Limit(s.MaxResponseHeaderBytes)),
	}
	return g
}

// errRetiredDial is the error of a dial that ended after its generation
// was retired with no request left on it.
var errRetiredDial = errors.New("legacy: the shared transport was retired while this connection was dialled")

// dial dials for g's transport. net/http dials in the background and
// keeps a connection whose request went elsewhere as an idle one; one
// that comes in after g was retired and its last request ended would stay
// idle for good (the last CloseIdleConnections ran before it came, and
// nothing calls it again), so it is closed at once.
func (g *generation) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := g.dialer.DialContext(ctx, network, addr)
	if err == nil && g.retired.Load() && g.inflight.Load() == 0 {
		c.Close()
		return nil, errRetiredDial
	}
	return c, err
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
		return nil, backend.ErrDrained // closed: the request path moves the request
	}
	g.inflight.Add(1)
	resp, err := g.tr.RoundTrip(req)
	if err != nil {
		g.release()
		return nil, err
	}
	if _, ok := resp.Body.(io.ReadWriteCloser); ok && resp.StatusCode == http.StatusSwitchingProtocols {
		// A protocol upgrade: the connection left the transport, which no
		// longer counts it; the body stays writable.
		g.release()
		return resp, nil
	}
	resp.Body = &trackedBody{rc: resp.Body, g: g}
	return resp, nil
}

// current returns the generation to use, rotating first if the current one
// has outlived the handler lifetime.
func (r *rotator) current() *generation {
	g := r.cur.Load()
	lifetime := r.key.lifetime
	if g == nil || lifetime <= 0 || time.Since(g.born) < lifetime {
		return g
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if g = r.cur.Load(); g != nil && time.Since(g.born) >= lifetime {
		next := r.newGeneration()
		r.cur.Store(next)
		g.retire()
		r.log.Debug("legacy transport rotated", "handler_lifetime", lifetime)
		g = next
	}
	return g
}

func (r *rotator) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
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
