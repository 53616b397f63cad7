package sockets

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/fusiongo/transport/fault"
)

// The h1 engine does not upgrade protocols itself: a request that asks for
// an upgrade (an Upgrade named in Connection, as a WebSocket client's
// handshake does) goes through a net/http Transport of the schema's own,
// dialled as the h1 engine dials, with its TLS settings and no proxy, one
// connection per request. net/http hands the connection over on a 101 with
// a writable body; any other answer closes its connection when its body is
// closed.
// The connection is outside the pool: max_conns_per_host does not count
// it, and a drained pool does not close it (the invoker's Close does).

// upgrader is the h1 engine's Transport for protocol upgrades, built on
// first use. Its fields are set once, under once.
type upgrader struct {
	once sync.Once
	tr   *http.Transport
}

// transport returns the Transport for p's schema, building it once. Its
// connections go to an address p chooses (upgradeAddr).
func (u *upgrader) transport(p *pool) *http.Transport {
	d := p.h1
	u.once.Do(func() {
		u.tr = &http.Transport{
			Proxy: nil, // never the environment's, as the h1 engine
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				addr, err := p.upgradeAddr(ctx)
				if err != nil {
					return nil, err
				}
				return d.dial(ctx, "tcp", addr)
			},
			TLSClientConfig:        d.tls, // http/1.1 by ALPN only
			TLSHandshakeTimeout:    d.handshake,
			MaxResponseHeaderBytes: d.maxHeader,
			DisableCompression:     true,
			DisableKeepAlives:      true,
		}
	})
	return u.tr
}

// upgrade sends req, which asks for a protocol upgrade, on the upgrade
// Transport, its response headers bounded by within when positive (a
// *fault.HeaderTimeoutError past it). After a 101 no bound of the request
// reaches the connection.
func (p *pool) upgrade(req *http.Request, within time.Duration) (*http.Response, error) {
	tr := p.upgrades.transport(p)
	if within <= 0 {
		return tr.RoundTrip(req)
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	cause := &fault.HeaderTimeoutError{Bound: within}
	timer := time.AfterFunc(within, func() { cancel(cause) })
	resp, err := tr.RoundTrip(req.WithContext(ctx))
	if !timer.Stop() {
		if err == nil {
			resp.Body.Close()
		}
		cancel(nil)
		return nil, cause
	}
	switch {
	case err != nil:
		cancel(nil)
		return nil, err
	case resp.StatusCode == http.StatusSwitchingProtocols:
		// net/http has handed the connection over: the context no longer
		// reaches it.
		cancel(nil)
		return resp, nil
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// upgradeAddr is where an upgrade's connection goes: the address in
// service with the fewest requests in flight (the connection is outside
// the pool, so it adds to no count), or the host by name when the pool
// has no addresses of its own. It waits for the pool's first lookup.
func (p *pool) upgradeAddr(ctx context.Context) (string, error) {
	p.waitAddrs(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, _ := p.target(); a != nil {
		return a.dialTo, nil
	}
	if p.resolver != nil {
		p.resolveNow()
		return "", p.noAddress()
	}
	return p.h1.addr, nil
}

// cancelOnClose is a response body whose request context ends when it is
// closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelCauseFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel(nil)
	return err
}
