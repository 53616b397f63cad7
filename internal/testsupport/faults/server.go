package faults

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Options tune the faults. The zero value is valid: every field documents
// its default.
type Options struct {
	// RetryAfter is the Retry-After of TooManyRequests, in whole seconds.
	// Default: 1s.
	RetryAfter time.Duration

	// HeaderBytes is how many header bytes OversizedHeaders sends. It must
	// exceed the client's limit to be a fault; net/http's default limit is
	// 10 MiB (Transport.MaxResponseHeaderBytes zero). Default: 11 MiB.
	HeaderBytes int

	// EndlessCap is how many body bytes EndlessBody sends at most before it
	// gives up on the client and closes the connection, so that a client
	// that reads forever still ends. Default: 64 MiB.
	EndlessCap int64

	// AckWait bounds how long ResetMidBody waits for the client to
	// acknowledge the partial body before resetting. Default: 1s.
	AckWait time.Duration
}

// Defaults of Options.
const (
	DefaultRetryAfter  = time.Second
	DefaultHeaderBytes = 11 << 20
	DefaultEndlessCap  = 64 << 20
	DefaultAckWait     = time.Second
)

func (o Options) retryAfter() time.Duration {
	if o.RetryAfter <= 0 {
		return DefaultRetryAfter
	}
	return o.RetryAfter
}

func (o Options) headerBytes() int {
	if o.HeaderBytes <= 0 {
		return DefaultHeaderBytes
	}
	return o.HeaderBytes
}

func (o Options) endlessCap() int64 {
	if o.EndlessCap <= 0 {
		return DefaultEndlessCap
	}
	return o.EndlessCap
}

func (o Options) ackWait() time.Duration {
	if o.AckWait <= 0 {
		return DefaultAckWait
	}
	return o.AckWait
}

// Server serves the faults on loopback. It is safe for concurrent use; Close
// ends every connection and waits for every goroutine it started.
type Server struct {
	opts    Options
	plain   net.Listener // every fault but Refused and TLSHandshake
	tls     net.Listener // TLSHandshake; a handshake that succeeds serves as plain
	refused *reservedAddr
	tlsConf *tls.Config

	wg     sync.WaitGroup // accept loops and connections
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	seen   map[Fault]int
	closed bool
}

// Start listens on 127.0.0.1 (three ports: plain, TLS, and one reserved
// with no listener) and serves until Close.
func Start(opts Options) (*Server, error) {
	s := &Server{opts: opts, conns: map[net.Conn]struct{}{}, seen: map[Fault]int{}}
	var err error
	if s.tlsConf, err = selfSignedConfig(); err != nil {
		return nil, fmt.Errorf("faults: %w", err)
	}
	if s.plain, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("faults: %w", err)
	}
	if s.tls, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		s.plain.Close()
		return nil, fmt.Errorf("faults: %w", err)
	}
	if s.refused, err = reserveAddr(); err != nil {
		s.plain.Close()
		s.tls.Close()
		return nil, fmt.Errorf("faults: %w", err)
	}
	s.wg.Add(2)
	go s.accept(s.plain, s.serveHTTP)
	go s.accept(s.tls, s.serveTLS)
	return s, nil
}

// URL returns the absolute URL that answers with f: on the plain port for
// most faults, on the TLS port (https) for TLSHandshake, and on the reserved
// port with no listener for Refused.
func (s *Server) URL(f Fault) string {
	switch f {
	case Refused:
		return "http://" + s.refused.addr + f.Path()
	case TLSHandshake:
		return "https://" + s.tls.Addr().String() + f.Path()
	}
	return "http://" + s.plain.Addr().String() + f.Path()
}

// URLs returns the URL of every fault in All, and of None.
func (s *Server) URLs() map[Fault]string {
	m := map[Fault]string{None: s.URL(None)}
	for _, f := range All {
		m[f] = s.URL(f)
	}
	return m
}

// Seen returns how many requests for f the server read, or, for
// TLSHandshake, how many handshakes it attempted. Refused always has 0.
func (s *Server) Seen(f Fault) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[f]
}

func (s *Server) count(f Fault) {
	s.mu.Lock()
	s.seen[f]++
	s.mu.Unlock()
}

// Close stops the listeners, closes every connection, which ends every
// fault that is waiting or streaming, and waits for their goroutines.
// Close is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	conns := make([]net.Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	err := errors.Join(s.plain.Close(), s.tls.Close(), s.refused.Close())
	for _, c := range conns {
		c.Close()
	}
	s.wg.Wait()
	return err
}

// accept hands each connection to serve on its own goroutine until ln
// closes.
func (s *Server) accept(ln net.Listener, serve func(net.Conn)) {
	defer s.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return
			}
			// Out of descriptors or the like: the listener is still
			// open, so back off and try again, as net/http's server does.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if !s.track(c) {
			c.Close()
			continue // Close has run; the next Accept fails
		}
		go func() {
			defer s.wg.Done()
			defer s.untrack(c)
			serve(c)
		}()
	}
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// track registers c so that Close closes it. It reports false once Close
// has started.
func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *Server) untrack(c net.Conn) {
	c.Close() // a reset closed it already; a second Close is harmless
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// serveTLS runs the handshake, which a client that checks certificates
// fails, and serves the plain faults on the connection if it succeeds.
func (s *Server) serveTLS(c net.Conn) {
	s.count(TLSHandshake)
	tc := tls.Server(c, s.tlsConf)
	// The deadline keeps a client that never finishes the handshake from
	// holding the connection until Close.
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if err := tc.Handshake(); err != nil {
		return
	}
	c.SetDeadline(time.Time{})
	s.serveConn(tc, nil)
}

// serveHTTP serves the plain port.
func (s *Server) serveHTTP(c net.Conn) {
	tcp, _ := c.(*net.TCPConn)
	s.serveConn(c, tcp)
}

// waitGone blocks until the peer closes c or Close closes it, discarding
// anything the peer sends meanwhile.
func waitGone(c net.Conn) {
	io.Copy(io.Discard, c)
}
