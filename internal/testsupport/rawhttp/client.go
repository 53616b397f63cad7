package rawhttp

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
)

// Client is the floor of a benchmark: an HTTP/1.1 client over one
// connection that writes each request with one write from a reused buffer
// and reads the response into another, so that a call costs no allocation
// once the buffers have grown. It sends one request at a time and is not
// safe for concurrent use.
type Client struct {
	conn  net.Conn
	host  string
	extra []byte // header lines added by AddHeader, CRLF-terminated
	req   []byte // the request being written
	buf   []byte // bytes read from conn; buf[start:end] not yet consumed
	body  []byte // the last response's body
	// start and end delimit the bytes read but not yet consumed: the rest
	// of a read that went past the last response.
	start, end int
}

// ErrUnsupported is returned for a response the client does not parse: one
// without a Content-Length, such as a chunked one.
var ErrUnsupported = errors.New("rawhttp: response without Content-Length")

// Dial connects to addr (host:port) over TCP.
func Dial(addr string) (*Client, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &Client{
		conn: c,
		host: addr,
		req:  make([]byte, 0, 1024),
		buf:  make([]byte, initialBuf),
		body: make([]byte, 0, 2048),
	}, nil
}

// AddHeader adds a header line to every request the client sends after it,
// so that the floor puts on the wire what the clients measured against it
// do. name and value must not hold CR or LF.
func (c *Client) AddHeader(name, value string) {
	c.extra = append(append(append(append(c.extra, name...), ": "...), value...), "\r\n"...)
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Post sends body to path as a GraphQL-over-HTTP POST (the Content-Type and
// Accept of the invokers' Post, and the AddHeader lines) and returns the
// body of a 200 response. The returned slice is reused by the next call. Another status is
// an error after which the connection stays usable; after any other error
// the connection's state is unknown, and the Client must be closed.
func (c *Client) Post(path string, body []byte) ([]byte, error) {
	r := c.req[:0]
	r = append(r, "POST "...)
	r = append(r, path...)
	r = append(r, " HTTP/1.1\r\nHost: "...)
	r = append(r, c.host...)
	r = append(r, "\r\nContent-Type: application/json; charset=utf-8\r\nAccept: application/graphql-response+json; charset=utf-8, application/json; charset=utf-8\r\n"...)
	r = append(r, c.extra...)
	r = append(r, "Content-Length: "...)
	r = strconv.AppendInt(r, int64(len(body)), 10)
	r = append(r, "\r\n\r\n"...)
	r = append(r, body...)
	c.req = r
	if _, err := c.conn.Write(r); err != nil {
		return nil, err
	}

	head, err := c.readHead()
	if err != nil {
		return nil, err
	}
	status, length, err := parseResponseHead(c.buf[c.start : c.start+head])
	c.start += head
	if err != nil {
		return nil, err
	}
	if err := c.readBody(length); err != nil {
		return nil, err
	}
	if status != 200 {
		return nil, fmt.Errorf("rawhttp: status %d", status)
	}
	return c.body, nil
}

// readHead reads until buf[start:] holds a whole response head and returns
// its length.
func (c *Client) readHead() (int, error) {
	for {
		if n, ok := headEnd(c.buf[c.start:c.end]); ok {
			return n, nil
		}
		if c.start > 0 {
			c.end = copy(c.buf, c.buf[c.start:c.end])
			c.start = 0
		}
		if c.end == len(c.buf) {
			if len(c.buf) >= maxHead {
				return 0, errors.New("rawhttp: response head too large")
			}
			c.buf = append(c.buf, make([]byte, len(c.buf))...)
		}
		n, err := c.conn.Read(c.buf[c.end:])
		c.end += n
		if err != nil && n == 0 {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
	}
}

// readBody copies the next length bytes, from what is buffered and then
// from the connection, into c.body.
func (c *Client) readBody(length int) error {
	if cap(c.body) < length {
		c.body = make([]byte, 0, length)
	}
	b := c.body[:length]
	k := copy(b, c.buf[c.start:c.end])
	c.start += k
	if c.start == c.end {
		c.start, c.end = 0, 0
	}
	if k < length {
		if _, err := io.ReadFull(c.conn, b[k:]); err != nil {
			return err
		}
	}
	c.body = b
	return nil
}

// parseResponseHead reads the status code and Content-Length of a response
// head that ends in CRLFCRLF.
func parseResponseHead(head []byte) (status, length int, err error) {
	line, rest := cutLine(head)
	// "HTTP/1.1 200 OK": the code is the three digits after the first space.
	if len(line) < 12 || !equalFold(line[:5], "HTTP/") || line[8] != ' ' {
		return 0, 0, fmt.Errorf("rawhttp: malformed status line %q", line)
	}
	status, ok := parseLength(line[9:12])
	if !ok {
		return 0, 0, fmt.Errorf("rawhttp: malformed status line %q", line)
	}
	length = -1
	for len(rest) > 0 {
		line, rest = cutLine(rest)
		if len(line) == 0 {
			break
		}
		name, value, ok := cutHeader(line)
		if !ok {
			return 0, 0, fmt.Errorf("rawhttp: malformed header line %q", line)
		}
		if equalFold(name, "Content-Length") {
			if length, ok = parseLength(value); !ok {
				return 0, 0, fmt.Errorf("rawhttp: bad Content-Length %q", value)
			}
		}
	}
	if length < 0 {
		return 0, 0, ErrUnsupported
	}
	return status, length, nil
}
