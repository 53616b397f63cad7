// Package h1 reads and writes the HTTP/1.1 client side of the wire as
// net/http's client does, without net/http's per-connection goroutines.
//
// The response side (ReadResponse and Body) reads a response on the
// caller's goroutine from a *bufio.Reader the caller owns and returns a
// real *http.Response. Its framing and parsing rules are those net/http's
// Transport applies to HTTP/1.x responses in Go 1.26: the status line and
// header as net/textproto reads them (bare LF line ends, obs-fold joined
// with one space, a space before the colon kept in a non-canonical key,
// invalid names and values refused), Transfer-Encoding and Content-Length
// as net/http's readTransfer decides them (only a single "chunked" coding;
// duplicate Content-Length values must agree; Transfer-Encoding overrides
// Content-Length; HTTP/1.0 ignores Transfer-Encoding), chunked bodies as
// net/http/internal's chunked reader reads them (CRLF only, extensions
// discarded, lines under 4 KiB, bounded non-data overhead) with trailers,
// interim 1xx responses skipped, and the Transport's bound on the header
// bytes of the interim and final responses together. The fuzz test
// FuzzReadResponse checks the parse against http.ReadResponse.
//
// The connection's owner learns through Owner.BodyDone when a body ends
// and whether the connection may carry another request.
package h1
