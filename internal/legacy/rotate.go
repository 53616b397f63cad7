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
	key   *key                                  // immutable; its shared settings and lifetime are the rotator's
	log   *slog.Logger                          // immutable
	proxy func(*http.Request) (*url.URL, error) // immutable

	cur  atomic.Pointer[generation] // nil once closed; swapped under mu
	mu   sync.Mutex                 // serialises rotation and close
	refs int                        // Transports open on it; guarded by Backend.mu

	// hooks are the SchemaOptions hooks of the schemas open on it, by
	// dial address (hooks.go); never nil. Stored under Backend.mu, read
	// by every dial without a lock.
	hooks atomic.Pointer[hookTable]
}

// generation is one http.Transport of a rotator.
type generation struct {
	tr       *http.Transport            // immutable
	dialer   *net.Dialer                // immutable
	hooks    *atomic.Pointer[hookTable] // immutable: its rotator's
	born     time.Time                  // immutable
	inflight atomic.Int64               // requests sent on tr whose body is not yet done
	retired  atomic.Bool                // set once, when tr was replaced or its rotator closed
	dialed   atomic.Bool                // set at tr's first dial: it may hold connections
}

func newRotator(k *key, proxy func(*http.Request) (*url.URL, error), log *slog.Logger) *rotator {
	r := &rotator{key: k, log: log, proxy: proxy}
	r.hooks.Store(&hookTable{})
	r.cur.Store(r.newGeneration())
	return r
}

// newGeneration builds a transport with Go's DefaultTransport settings,
// except where the configuration's defaults say otherwise.
func (r *rotator) newGeneration() *generation {
	s := r.key.shared
	g := &generation{born: time.Now(), dialer: backend.Dialer(s), hooks: &r.hooks}
	g.tr = &http.Transport{
		Proxy:                 r.proxy,
		DialContext:           g.dial,
		DialTLSContext:        g.dialTLS,
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

// dial dials for g's transport: with the Dial hook registered for addr,
// bounded by connect_timeout as the dialer is, or else the dialer. net/http
// dials in the background and keeps a connection whose request went
// elsewhere as an idle one; one that comes in after g was retired and its
// last request ended would stay idle for good (the last
// CloseIdleConnections ran before it came, and nothing calls it again), so
// it is closed at once.
func (g *generation) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	// Before the table is read: a hook registered after this store finds
	// dialed set and rotates (rotator.setHooks); one registered before it
	// is in the table read below.
	g.dialed.Store(true)
	dial := g.dialer.DialContext
	if hook := (*g.hooks.Load()).dialer(addr); hook != nil {
		dial = hook
		if d := g.dialer.Timeout; d > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
	}
	c, err := dial(ctx, network, addr)
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
	return g.roundTrip(req)
}

// roundTrip sends req on g's transport, counting it in flight until its
// body is done. g may have been retired since the rotator handed it out.
func (g *generation) roundTrip(req *http.Request) (*http.Response, error) {
	g.inflight.Add(1)
	if req.Header.Get("Upgrade") != "" {
		// net/http sends a websocket upgrade on an HTTP/1 connection of
		// its own, which dialTLS must not offer HTTP/2 on; every other
		// upgrade too, to be sure: such a connection is HTTP/1.1 at worst.
		req = req.WithContext(context.WithValue(req.Context(), http1Only{}, true))
	}
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
		g = r.rotateLocked()
		r.log.Debug("legacy transport rotated", "handler_lifetime", lifetime)
	}
	return g
}

// rotateLocked replaces the current generation with a new one and retires
// the old; it returns the new one. r.mu is held, and r is not closed.
func (r *rotator) rotateLocked() *generation {
	next := r.newGeneration()
	r.cur.Swap(next).retire()
	return next
}

// setHooks stores t as r's hooks. The current generation's connections
// were dialled and verified by the hooks before, so if it has dialled
// any, the next requests go to a new one: a pin added by a reload holds
// for every request after it. Requests already sent end on the old
// generation. Backend.mu is held.
func (r *rotator) setHooks(t hookTable) {
	r.hooks.Store(&t)
	r.mu.Lock()
	defer r.mu.Unlock()
	if g := r.cur.Load(); g != nil && g.dialed.Load() {
		r.rotateLocked()
		r.log.Debug("legacy transport rotated: the SchemaOptions hooks changed")
	}
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
// turns idle later, until a request asks it for a connection again: one
// that took g just before it was retired does. So release calls it again
// each time a request on a retired g ends, its count in flight aside: the
// last call then follows every request's asking, and a connection never
// waits for the slowest request of its generation, nor stays open for good
// when one request's count is never released.
func (g *generation) retire() {
	g.retired.Store(true)
	g.tr.CloseIdleConnections()
}

func (g *generation) release() {
	g.inflight.Add(-1)
	if g.retired.Load() {
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
