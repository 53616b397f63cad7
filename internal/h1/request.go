package h1

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// defaultUserAgent is what net/http's client sends when a request has no
// User-Agent header, so that a source schema cannot tell the engines apart.
const defaultUserAgent = "Go-http-client/1.1"

// maxSortedKeys is how many header keys AppendRequest sorts without
// allocating; a request with more sorts them on the heap.
const maxSortedKeys = 32

// Framing says how a request's body goes on the wire, and whether the
// connection ends with it.
type Framing struct {
	// ContentLength is the body's length, or -1 when it is unknown and the
	// body goes chunked. 0 with Chunked false: no body.
	ContentLength int64
	// Chunked: the body goes with Transfer-Encoding: chunked.
	Chunked bool
	// SendLength: the header carries Content-Length (also 0 for POST, PUT
	// and PATCH without a body, as net/http sends it).
	SendLength bool
	// Close: the head asks the server to close the connection after its
	// answer (Connection: close), as req.Close does; set by the caller
	// (FramingOf leaves it false) for a connection that carries one
	// request.
	Close bool
}

// FramingOf decides how req's body goes, as net/http's client does
// (transferWriter): a known length as Content-Length, an unknown one
// chunked. Unlike net/http it does not read ahead into a body of unknown
// length to find out whether it is empty: such a body goes chunked.
func FramingOf(req *http.Request) (Framing, error) {
	f := Framing{}
	switch {
	case req.Body == nil || req.Body == http.NoBody:
		if req.ContentLength != 0 && req.Body == nil {
			return f, fmt.Errorf("h1: Request.ContentLength=%d with nil Body", req.ContentLength)
		}
	case req.ContentLength > 0:
		f.ContentLength = req.ContentLength
	default:
		f.ContentLength, f.Chunked = -1, true
	}
	for _, te := range req.TransferEncoding {
		if te != "chunked" {
			return f, fmt.Errorf("h1: unsupported transfer encoding %q", te)
		}
		if f.ContentLength > 0 {
			f.ContentLength, f.Chunked = -1, true
		}
	}
	if !f.Chunked {
		// An empty body goes with Content-Length: 0 for POST, PUT and
		// PATCH only ("many servers expect a Content-Length for these
		// methods", transfer.go's shouldSendContentLength).
		f.SendLength = f.ContentLength > 0 || req.Method == http.MethodPost || req.Method == http.MethodPut || req.Method == http.MethodPatch
	}
	return f, nil
}

// Check refuses what net/http's Transport refuses before it writes a
// request: a method that is not a token, a header name or value that is
// not valid (a value may not hold CR, LF or another control byte but tab),
// a URL with a control byte, no host, trailers.
func Check(req *http.Request) error {
	if req.URL == nil {
		return errors.New("h1: nil Request.URL")
	}
	if req.Method != "" && !validMethod(req.Method) {
		return fmt.Errorf("h1: invalid method %q", req.Method)
	}
	if req.Method == http.MethodConnect {
		return errors.New("h1: CONNECT is not served by the h1 engine")
	}
	if req.URL.Host == "" {
		return errors.New("h1: no Host in request URL")
	}
	if !httpguts.ValidHostHeader(host(req)) {
		return fmt.Errorf("h1: invalid Host %q", host(req))
	}
	// The request target is RequestURI(), in which the path is escaped:
	// a control byte can come only from the opaque part, the query or the
	// scheme an opaque "//" target carries (checked without building it).
	if u := req.URL; hasCTL(u.RawQuery) || (u.Opaque != "" && (hasCTL(u.Opaque) || hasCTL(u.Scheme))) {
		return errors.New("h1: can't write control character in Request.URL")
	}
	if req.Header == nil {
		return errors.New("h1: nil Request.Header")
	}
	for k, vv := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return fmt.Errorf("h1: invalid header field name %q", k)
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				return fmt.Errorf("h1: invalid header field value for %q", k)
			}
		}
	}
	if len(req.Trailer) > 0 {
		return errors.New("h1: request trailers are not served by the h1 engine")
	}
	return nil
}

// AppendRequest appends req's request line and header, as net/http's
// client writes them, to dst: the request line, Host, User-Agent
// (Go-http-client/1.1 unless the header sets one; none if it is set
// empty), Connection: close when req.Close or f.Close, Content-Length or
// Transfer-Encoding as f says, then the other header fields sorted by key,
// each value trimmed, and the blank line. Call Check first.
func AppendRequest(dst []byte, req *http.Request, f Framing) []byte {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	dst = append(dst, method...)
	dst = append(dst, ' ')
	dst = appendRequestURI(dst, req)
	dst = append(dst, " HTTP/1.1\r\nHost: "...)
	dst = appendHost(dst, host(req))
	dst = append(dst, "\r\n"...)
	ua := defaultUserAgent
	if vv, ok := req.Header["User-Agent"]; ok {
		ua = ""
		if len(vv) > 0 {
			ua = vv[0]
		}
	}
	if ua != "" {
		dst = append(dst, "User-Agent: "...)
		dst = append(dst, trimString(ua)...)
		dst = append(dst, "\r\n"...)
	}
	if (req.Close || f.Close) && !hasToken(firstValue(req.Header["Connection"]), "close") {
		dst = append(dst, "Connection: close\r\n"...)
	}
	switch {
	case f.SendLength:
		dst = append(dst, "Content-Length: "...)
		dst = strconv.AppendInt(dst, f.ContentLength, 10)
		dst = append(dst, "\r\n"...)
	case f.Chunked:
		dst = append(dst, "Transfer-Encoding: chunked\r\n"...)
	}
	var stack [maxSortedKeys]string
	keys := stack[:0]
	for k := range req.Header {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range req.Header[k] {
			dst = append(dst, k...)
			dst = append(dst, ": "...)
			dst = append(dst, trimString(v)...)
			dst = append(dst, "\r\n"...)
		}
	}
	return append(dst, "\r\n"...)
}

// appendRequestURI appends req.URL.RequestURI() without building it as a
// string when the URL is the common case: a path (already valid as sent)
// and a query.
func appendRequestURI(dst []byte, req *http.Request) []byte {
	u := req.URL
	if u.Opaque == "" && u.RawPath == "" && !u.ForceQuery && u.Path != "" && u.Path[0] == '/' && !needsEscape(u.Path) {
		dst = append(dst, u.Path...)
		if u.RawQuery != "" {
			dst = append(dst, '?')
			dst = append(dst, u.RawQuery...)
		}
		return dst
	}
	return append(dst, u.RequestURI()...)
}

// needsEscape reports whether p has a byte other than the few that
// url.URL.EscapedPath surely leaves alone; such a path takes the slow way.
func needsEscape(p string) bool {
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-' || c == '_' || c == '.' || c == '~' || c == '/':
		default:
			return true
		}
	}
	return false
}

// LastChunk ends a chunked body with no trailer.
const LastChunk = "0\r\n\r\n"

// WriteChunked copies body to w as chunks of at most len(buf) bytes, then
// the last chunk, using buf for the copy.
func WriteChunked(w io.Writer, body io.Reader, buf []byte) error {
	const room = 20 // the size line and the CRLF after the data
	if len(buf) <= room {
		buf = make([]byte, 32<<10)
	}
	for {
		n, rerr := body.Read(buf[room-2 : len(buf)-2])
		if n > 0 {
			// The size line goes right before the data, in place.
			line := strconv.AppendInt(buf[:0:room], int64(n), 16)
			line = append(line, "\r\n"...)
			start := room - 2 - len(line)
			copy(buf[start:], line)
			end := room - 2 + n
			buf[end], buf[end+1] = '\r', '\n'
			if _, err := w.Write(buf[start : end+2]); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			_, err := io.WriteString(w, LastChunk)
			return err
		}
		if rerr != nil {
			return rerr
		}
	}
}

func host(req *http.Request) string {
	if req.Host != "" {
		return req.Host
	}
	return req.URL.Host
}

// firstValue is http.Header.Get's value: the first one, or "".
func firstValue(vv []string) string {
	if len(vv) == 0 {
		return ""
	}
	return vv[0]
}

// hasToken reports whether v holds token (ASCII, lower case) between
// space, tab or comma boundaries, case-insensitively, as net/http decides
// whether a Connection header already says close.
func hasToken(v, token string) bool {
	for i := 0; i+len(token) <= len(v); i++ {
		if i > 0 && !tokenBoundary(v[i-1]) {
			continue
		}
		if end := i + len(token); end != len(v) && !tokenBoundary(v[end]) {
			continue
		}
		if asciiEqualFold(v[i:i+len(token)], token) {
			return true
		}
	}
	return false
}

func tokenBoundary(b byte) bool { return b == ' ' || b == ',' || b == '\t' }

// appendHost appends host as the Host header carries it: an IPv6 zone
// ("[fe80::1%en0]:8080") is left out, as net/http's removeZone does (RFC
// 6874: the zone is local to the sender), to the byte: from the last '%'
// before the last ']' up to that ']' ("[%%]" keeps "[%]").
func appendHost(dst []byte, host string) []byte {
	if strings.HasPrefix(host, "[") {
		if end := strings.LastIndexByte(host, ']'); end >= 0 {
			if pct := strings.LastIndexByte(host[:end], '%'); pct >= 0 {
				dst = append(dst, host[:pct]...)
				return append(dst, host[end:]...)
			}
		}
	}
	return append(dst, host...)
}

func hasCTL(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < ' ' || b == 0x7f {
			return true
		}
	}
	return false
}

// validMethod reports whether m is a token (RFC 9110, 9.1).
func validMethod(m string) bool {
	for i := 0; i < len(m); i++ {
		if !httpguts.IsTokenRune(rune(m[i])) {
			return false
		}
	}
	return m != ""
}
