// Package rawhttp is a benchmark fixture: an HTTP/1.1 responder and a
// client, each hand-written over one TCP connection with reused buffers, so
// that neither allocates per request in steady state. The responder lets a
// benchmark count only its client's cost; the client is the floor that any
// net/http based client is measured against.
//
//	r, err := rawhttp.Start(body)
//	if err != nil { ... }
//	defer r.Close()
//	c, err := rawhttp.Dial(r.Addr())
//	if err != nil { ... }
//	defer c.Close()
//	got, err := c.Post("/graphql", []byte(`{"query":"{ ok }"}`))
//
// Both speak only as much HTTP/1.1 as a GraphQL POST with a Content-Length
// needs; neither is meant for anything but loopback benchmarks and tests.
package rawhttp

import (
	"net"
	"strconv"
	"sync"
)

// Limits of the responder. A request whose head does not fit in maxHead
// gets 431 and the connection closes: a benchmark client sends far less.
const (
	initialBuf = 4 << 10
	maxHead    = 64 << 10
)

// Responder answers every HTTP/1.1 request on a loopback listener with one
// fixed 200 response. It reads requests with a reused buffer per connection
// and writes pre-built bytes, so a request costs it no allocation. It keeps
// connections alive and answers pipelined requests in order.
type Responder struct {
	ln   net.Listener
	addr string
	url  string
	resp []byte // the whole response: status line, headers and body

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Start listens on 127.0.0.1 on a free port and answers each request with
// status 200, Content-Type application/json and body. The caller must not
// modify body afterwards.
func Start(body []byte) (*Responder, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Responder{
		ln:    ln,
		addr:  ln.Addr().String(),
		resp:  buildResponse(body),
		conns: make(map[net.Conn]struct{}),
	}
	r.url = "http://" + r.addr
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

func buildResponse(body []byte) []byte {
	b := make([]byte, 0, 128+len(body))
	b = append(b, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\n\r\n"...)
	return append(b, body...)
}

// Canned answers to what the responder does not serve; each closes the
// connection.
var (
	respTooLarge       = []byte("HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	respBadRequest     = []byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	respNotImplemented = []byte("HTTP/1.1 501 Not Implemented\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
)

// Addr returns the listener's address, host:port.
func (r *Responder) Addr() string { return r.addr }

// URL returns the responder's base URL, "http://127.0.0.1:port", without a
// path: it answers every path alike.
func (r *Responder) URL() string { return r.url }

// Close stops the listener, closes every connection and waits until their
// goroutines have returned. Calling it again does nothing.
func (r *Responder) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	err := r.ln.Close()
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
	return err
}

func (r *Responder) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return // closed, or out of descriptors: a fixture need not wait
		}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			c.Close()
			return
		}
		r.conns[c] = struct{}{}
		r.wg.Add(1)
		r.mu.Unlock()
		go r.serve(c)
	}
}

// serve answers the requests on c until the client closes it, asks to, or
// sends something the responder does not parse. All responses to the
// requests that one read completed leave in one write, as a pipelining
// server should.
func (r *Responder) serve(c net.Conn) {
	defer r.wg.Done()
	defer func() {
		r.mu.Lock()
		delete(r.conns, c)
		r.mu.Unlock()
		c.Close()
	}()
	buf := make([]byte, initialBuf)
	var out []byte
	start, end := 0, 0 // unparsed bytes are buf[start:end]
	skip := 0          // body bytes of the current request not yet read
	closing := false   // answered a request after which the connection closes
	for {
		n, err := c.Read(buf[end:])
		end += n
		out = out[:0]
		for {
			if skip > 0 {
				k := min(skip, end-start)
				skip -= k
				start += k
				if skip > 0 {
					break
				}
			}
			if closing {
				break
			}
			head, ok := headEnd(buf[start:end])
			if !ok {
				break
			}
			req := parseHead(buf[start : start+head])
			start += head
			switch {
			case req.bad:
				out = append(out, respBadRequest...)
				closing = true
			case req.chunked:
				out = append(out, respNotImplemented...)
				closing = true
			default:
				out = append(out, r.resp...)
				skip = req.length
				closing = req.close
			}
		}
		if len(out) > 0 {
			if _, werr := c.Write(out); werr != nil {
				return
			}
		}
		// A closing connection first reads the rest of the last body:
		// closing with unread bytes would reset the connection, and the
		// client could lose the response.
		if closing && skip == 0 || err != nil {
			return
		}
		// Keep the unparsed bytes, at the front of the buffer, and make
		// room for a head that has not fully arrived yet.
		if start == end {
			start, end = 0, 0
		} else if start > 0 {
			end = copy(buf, buf[start:end])
			start = 0
		}
		if end == len(buf) {
			if len(buf) >= maxHead {
				c.Write(respTooLarge)
				return
			}
			buf = append(buf, make([]byte, len(buf))...)
		}
	}
}

// headEnd returns the length of the request head at the start of b, through
// its blank line, and whether b holds all of it.
func headEnd(b []byte) (int, bool) {
	for i := 3; i < len(b); i++ {
		if b[i] == '\n' && b[i-1] == '\r' && b[i-2] == '\n' && b[i-3] == '\r' {
			return i + 1, true
		}
	}
	return 0, false
}

// request is what the responder reads from a request head.
type request struct {
	length  int  // Content-Length, 0 if absent
	chunked bool // a Transfer-Encoding was sent: the body's length is unknown
	close   bool // Connection: close
	bad     bool // malformed request line or Content-Length
}

// parseHead reads the header lines of a head that ends in CRLFCRLF. It
// checks the request line only for the HTTP/1.1 version, and reads only the
// headers that frame the body and the connection.
func parseHead(head []byte) request {
	var req request
	line, rest := cutLine(head)
	if !hasSuffixFold(line, "HTTP/1.1") && !hasSuffixFold(line, "HTTP/1.0") {
		req.bad = true
		return req
	}
	if hasSuffixFold(line, "HTTP/1.0") {
		req.close = true // no keep-alive negotiation: HTTP/1.0 closes
	}
	for len(rest) > 0 {
		line, rest = cutLine(rest)
		if len(line) == 0 {
			break
		}
		name, value, ok := cutHeader(line)
		if !ok {
			req.bad = true
			return req
		}
		switch {
		case equalFold(name, "Content-Length"):
			n, ok := parseLength(value)
			if !ok {
				req.bad = true
				return req
			}
			req.length = n
		case equalFold(name, "Transfer-Encoding"):
			req.chunked = true
		case equalFold(name, "Connection"):
			if containsFold(value, "close") {
				req.close = true
			}
		}
	}
	return req
}

// cutLine splits b after its first CRLF; the line has no CRLF.
func cutLine(b []byte) (line, rest []byte) {
	for i := 1; i < len(b); i++ {
		if b[i] == '\n' && b[i-1] == '\r' {
			return b[:i-1], b[i+1:]
		}
	}
	return b, nil
}

// cutHeader splits a header line into its name and its trimmed value.
func cutHeader(line []byte) (name, value []byte, ok bool) {
	for i, c := range line {
		if c == ':' {
			if i == 0 {
				return nil, nil, false
			}
			value = line[i+1:]
			for len(value) > 0 && (value[0] == ' ' || value[0] == '\t') {
				value = value[1:]
			}
			for len(value) > 0 && (value[len(value)-1] == ' ' || value[len(value)-1] == '\t') {
				value = value[:len(value)-1]
			}
			return line[:i], value, true
		}
	}
	return nil, nil, false
}

// parseLength reads a Content-Length value: decimal digits only, as RFC 9110
// section 8.6 requires, and small enough not to overflow.
func parseLength(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 15 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// equalFold compares b and s in ASCII without regard to case, without
// converting b to a string (which would allocate).
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		if lower(b[i]) != lower(s[i]) {
			return false
		}
	}
	return true
}

func hasSuffixFold(b []byte, s string) bool {
	return len(b) >= len(s) && equalFold(b[len(b)-len(s):], s)
}

func containsFold(b []byte, s string) bool {
	for i := 0; i+len(s) <= len(b); i++ {
		if equalFold(b[i:i+len(s)], s) {
			return true
		}
	}
	return false
}
