package h1

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Owner is told when a response body ends.
type Owner interface {
	// BodyDone is called exactly once per *Body, by the goroutine that
	// ended it: reuse is true only when the body was read to its end, the
	// framing allows another response on the connection (not close-
	// delimited, resp.Close false) and no byte is left in the reader
	// beyond this response (br.Buffered() == 0).
	BodyDone(reuse bool)
}

// DefaultMaxHeaderBytes is used when maxHeaderBytes <= 0: net/http's
// default for Transport.MaxResponseHeaderBytes (10 MiB).
const DefaultMaxHeaderBytes = 10 << 20

// Sentinel errors wrapped by the errors of this package.
var (
	// ErrMalformed is wrapped by every refusal of a response that
	// net/http refuses too: a bad status line, header line, framing
	// header, chunk or trailer.
	ErrMalformed = errors.New("malformed HTTP response")
	// ErrHeaderTooLarge is wrapped when the interim and final response
	// heads together exceed maxHeaderBytes.
	ErrHeaderTooLarge = errors.New("response header too large")
	// ErrNoResponse is wrapped (together with io.ErrUnexpectedEOF, which
	// net/http returns there) when the connection ended before the first
	// byte of a response.
	ErrNoResponse = errors.New("connection closed before any response byte")
	// ErrBodyClosed is returned by Read after Close, as net/http's
	// "http: read on closed response body".
	ErrBodyClosed = errors.New("h1: read on closed response body")
)

// ReadResponse reads the response to req from br, as net/http's HTTP/1
// client (Transport) would: interim 1xx responses other than 101 are read
// and skipped; the heads of all of them and of the final response together
// may hold at most maxHeaderBytes bytes (DefaultMaxHeaderBytes when
// maxHeaderBytes <= 0), as the Transport's MaxResponseHeaderBytes bounds
// them when no httptrace hook sees the 1xx responses. net/http in Go 1.26
// has no separate count of 1xx responses: the shared byte bound is the
// only limit, and so it is here.
//
// A nil req is read as a GET. The returned Response has Request = req and
// every other field net/http's Transport fills for HTTP/1.x except TLS.
//
// A response without a body (HEAD, 1xx, 204, 304, Content-Length: 0) has
// Body == http.NoBody and owner is never called: the caller may reuse the
// connection iff !resp.Close and br.Buffered() == 0. A 101 response has a
// *Body whose Read returns io.EOF and whose Close calls
// owner.BodyDone(false). Any other response has a *Body reading its
// framing from br; see Body for when owner.BodyDone is called.
func ReadResponse(br *bufio.Reader, req *http.Request, maxHeaderBytes int64, owner Owner) (*http.Response, error) {
	if maxHeaderBytes <= 0 {
		maxHeaderBytes = DefaultMaxHeaderBytes
	}
	limit := maxHeaderBytes
	first := true
	for {
		resp, n, err := readOne(br, req, limit, owner, first)
		if err != nil {
			if errors.Is(err, ErrHeaderTooLarge) {
				return nil, fmt.Errorf("h1: server response headers exceeded %d bytes; aborted: %w", maxHeaderBytes, ErrHeaderTooLarge)
			}
			return nil, err
		}
		limit -= n
		first = false
		if c := resp.StatusCode; c >= 100 && c <= 199 && c != http.StatusSwitchingProtocols {
			// net/http's persistConn.readResponse skips interim
			// responses; their framing always has no body.
			continue
		}
		return resp, nil
	}
}

// respBody is the Response and its Body in one allocation, with room for
// the values of a small header.
type respBody struct {
	resp http.Response
	body Body
	vals [8]string
}

// readOne reads one response head from br and prepares its body, as
// http.ReadResponse does; n is the size of the head. limit bounds the
// head's size. first says whether this is the first response read for
// the request (for the error naming an empty connection).
func readOne(br *bufio.Reader, req *http.Request, limit int64, owner Owner, first bool) (resp *http.Response, n int64, err error) {
	head, err := readHead(br, limit, true, first)
	if err != nil {
		return nil, 0, err
	}
	n = int64(len(head))
	var small [smallHead]span
	var p parsed
	if p.fields, err = p.parse(head, true, small[:0]); err != nil {
		discard(br, head)
		return nil, n, err
	}
	rb := new(respBody)
	resp = &rb.resp
	// The head's bytes are copied once into the string every header
	// string is sliced from; head may alias br's buffer, so copy before
	// discarding it.
	s := p.build(head)
	discard(br, head)
	h := p.header(s, rb.vals[:])
	resp.Status = s[p.statusStart:p.statusEnd]
	resp.StatusCode = p.code
	resp.Proto = s[:p.protoEnd]
	resp.ProtoMajor, resp.ProtoMinor = p.major, p.minor
	resp.Header = h
	resp.Request = req

	// net/http's fixPragmaCacheControl (RFC 7234, section 5.4).
	if hp, ok := h["Pragma"]; ok && len(hp) > 0 && hp[0] == "no-cache" {
		if _, ok := h["Cache-Control"]; !ok {
			h["Cache-Control"] = []string{"no-cache"}
		}
	}
	if err := rb.transfer(req, br, owner); err != nil {
		return nil, n, err
	}
	return resp, n, nil
}

// discard drops a head that readHead left in br's buffer.
func discard(br *bufio.Reader, head []byte) {
	if br.Buffered() >= len(head) {
		if b, _ := br.Peek(len(head)); len(b) > 0 && &b[0] == &head[0] {
			br.Discard(len(head))
		}
	}
}

// framing of a body.
const (
	bodyLength  = iota + 1 // Content-Length
	bodyChunked            // Transfer-Encoding: chunked
	bodyEOF                // delimited by the connection's end
	bodyUpgrade            // 101 Switching Protocols: no body
)

// transfer applies net/http's readTransfer (transfer.go) to rb.resp: it
// decides the framing and fills ContentLength, TransferEncoding, Close,
// Trailer and Body.
func (rb *respBody) transfer(req *http.Request, br *bufio.Reader, owner Owner) error {
	resp := &rb.resp
	h := resp.Header
	method := "GET"
	if req != nil && req.Method != "" {
		method = req.Method
	}
	isHead := method == "HEAD"
	// net/http computes Close from the version as sent, then treats
	// HTTP/0.0 as HTTP/1.1 for the rest.
	resp.Close = shouldClose(resp.ProtoMajor, resp.ProtoMinor, h)
	major, minor := resp.ProtoMajor, resp.ProtoMinor
	if major == 0 && minor == 0 {
		major, minor = 1, 1
	}

	// Transfer-Encoding: the field is always removed; HTTP/1.0 and older
	// ignore it (go.dev/issue/12785); otherwise only one field whose
	// value is "chunked" is accepted.
	chunked := false
	if te, ok := h["Transfer-Encoding"]; ok {
		delete(h, "Transfer-Encoding")
		if major > 1 || major == 1 && minor >= 1 {
			if len(te) != 1 {
				return malformed("too many transfer encodings", strings.Join(te, ","))
			}
			if !asciiEqualFold(te[0], "chunked") {
				return malformed("unsupported transfer encoding", te[0])
			}
			chunked = true
		}
	}

	// Content-Length, as net/http's fixLength.
	cls := h["Content-Length"]
	var n int64
	if len(cls) > 1 {
		first := trimString(cls[0])
		for _, v := range cls[1:] {
			if trimString(v) != first {
				return malformed("multiple Content-Length headers", strings.Join(cls, ","))
			}
		}
		// Duplicates of one value collapse into that value, trimmed.
		cls = cls[:1:1]
		cls[0] = first
		h["Content-Length"] = cls
	}
	if len(cls) > 0 {
		var err error
		if n, err = parseContentLength(cls[0]); err != nil {
			return err
		}
	}
	bodyAllowed := bodyAllowedForStatus(resp.StatusCode)
	var realLength int64
	switch {
	case isHead || !bodyAllowed:
		realLength = 0
	case chunked:
		delete(h, "Content-Length")
		realLength = -1
	case len(cls) > 0:
		realLength = n
	default:
		realLength = -1
	}
	resp.ContentLength = realLength
	if isHead {
		// A HEAD response reports the length the GET would have had.
		resp.ContentLength = -1
		if len(cls) > 0 {
			resp.ContentLength = n
		}
	}

	// Trailer, as net/http's fixTrailer: only with chunked framing.
	if vv, ok := h["Trailer"]; ok && chunked {
		delete(h, "Trailer")
		var err error
		var trailer http.Header
		for _, v := range vv {
			forEachElement(v, func(key string) {
				key = http.CanonicalHeaderKey(key)
				switch key {
				case "Transfer-Encoding", "Trailer", "Content-Length":
					if err == nil {
						err = malformed("bad trailer key", key)
					}
					return
				}
				if trailer == nil {
					trailer = make(http.Header)
				}
				trailer[key] = nil
			})
		}
		if err != nil {
			return err
		}
		resp.Trailer = trailer
	}

	if realLength == -1 && !chunked && bodyAllowed {
		resp.Close = true // the body ends with the connection
	}
	if chunked {
		resp.TransferEncoding = []string{"chunked"}
	}

	b := &rb.body
	switch {
	case resp.StatusCode == http.StatusSwitchingProtocols:
		b.init(bodyUpgrade, 0, br, resp, owner)
	case chunked && (isHead || !bodyAllowed), realLength == 0:
		resp.Body = http.NoBody
		return nil
	case chunked:
		b.init(bodyChunked, 0, br, resp, owner)
	case realLength > 0:
		b.init(bodyLength, realLength, br, resp, owner)
	default:
		// realLength < 0 without chunked: resp.Close is set above.
		b.init(bodyEOF, 0, br, resp, owner)
	}
	resp.Body = b
	return nil
}

// bodyAllowedForStatus reports whether status permits a body (RFC 9110,
// section 6.4.1), as net/http's function of that name.
func bodyAllowedForStatus(status int) bool {
	return !(status >= 100 && status <= 199 || status == 204 || status == 304)
}

// shouldClose is net/http's shouldClose for a response: HTTP/0.x always
// closes; HTTP/1.0 closes unless "Connection: keep-alive" and not
// "close"; later versions close on "Connection: close", and then the
// Connection field is removed from the header.
func shouldClose(major, minor int, h http.Header) bool {
	if major < 1 {
		return true
	}
	conn := h["Connection"]
	hasClose := containsToken(conn, "close")
	if major == 1 && minor == 0 {
		return hasClose || !containsToken(conn, "keep-alive")
	}
	if hasClose {
		delete(h, "Connection")
	}
	return hasClose
}

// containsToken reports whether any comma-separated element of values,
// trimmed of spaces and tabs, is token (ASCII case-insensitive).
func containsToken(values []string, token string) bool {
	for _, v := range values {
		for {
			elem, rest, more := strings.Cut(v, ",")
			if asciiEqualFold(strings.Trim(elem, " \t"), token) {
				return true
			}
			if !more {
				break
			}
			v = rest
		}
	}
	return false
}

// asciiEqualFold reports whether s and t are equal under ASCII case
// folding; bytes outside ASCII never fold.
func asciiEqualFold(s, t string) bool {
	if len(s) != len(t) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if lowerASCII(s[i]) != lowerASCII(t[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}

// forEachElement calls fn for each non-empty comma-separated element of
// v trimmed of ASCII space, as net/http's foreachHeaderElement.
func forEachElement(v string, fn func(string)) {
	for {
		elem, rest, more := strings.Cut(v, ",")
		if elem = trimString(elem); elem != "" {
			fn(elem)
		}
		if !more {
			return
		}
		v = rest
	}
}

// trimString trims ASCII space (SP, HT, CR, LF), as textproto.TrimString.
func trimString(s string) string {
	for len(s) > 0 && isASCIISpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isASCIISpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

func isASCIISpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// parseContentLength parses one Content-Length value as net/http does:
// trimmed of ASCII space, decimal digits only, below 1<<63. (The
// GODEBUG setting httplaxcontentlength=1, which lets net/http accept an
// empty value, is not honoured.)
func parseContentLength(v string) (int64, error) {
	cl := trimString(v)
	if cl == "" {
		return 0, malformed("invalid empty Content-Length", cl)
	}
	n, err := strconv.ParseUint(cl, 10, 63)
	if err != nil {
		return 0, malformed("bad Content-Length", cl)
	}
	return int64(n), nil
}

// malformed returns an error naming what was wrong and quoting at most
// 40 bytes of the input, wrapping ErrMalformed.
func malformed(what, input string) error {
	return fmt.Errorf("h1: %s %s: %w", what, quote(input), ErrMalformed)
}

// quote quotes at most 40 bytes of s.
func quote(s string) string {
	const max = 40
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}

// readHead returns one head from br: with status, the status line and
// the header lines up to and including the first empty line after the
// status line; without, header lines (a trailer) up to and including the
// first empty line. A line ends at LF; an empty line is LF or CR LF, as
// bufio.Reader.ReadLine and net/textproto split lines.
//
// When the head fits in br's buffer, the result aliases it and is left
// in br (the caller copies it, then discard drops it); otherwise the
// result is a fresh slice and its bytes are consumed. A head longer than
// limit wraps ErrHeaderTooLarge; a connection that ends or fails before
// the empty line is an error (io.ErrUnexpectedEOF for the end).
func readHead(br *bufio.Reader, limit int64, status, first bool) ([]byte, error) {
	var acc []byte    // consumed bytes of a head longer than br's buffer
	inFirst := status // scanning the status line, which never ends the head
	lineStart := 0    // offset in the head of the line being scanned
	scan := 0         // offset in the window of the next byte to scan
	for {
		win, err := br.Peek(br.Buffered())
		if len(win) == 0 {
			_, err = br.Peek(1)
			if err != nil {
				return nil, headReadError(err, first && len(acc) == 0, status)
			}
			continue
		}
		for scan < len(win) {
			i := bytes.IndexByte(win[scan:], '\n')
			if i < 0 {
				scan = len(win)
				break
			}
			end := len(acc) + scan + i // offset of the LF in the head
			scan += i + 1
			if inFirst {
				inFirst = false
				lineStart = end + 1
				continue
			}
			if end == lineStart || end == lineStart+1 && headByte(acc, win, lineStart) == '\r' {
				if int64(end+1) > limit {
					return nil, ErrHeaderTooLarge
				}
				if acc == nil {
					return win[:end+1], nil
				}
				k := end + 1 - len(acc)
				acc = append(acc, win[:k]...)
				br.Discard(k)
				return acc, nil
			}
			lineStart = end + 1
		}
		if int64(len(acc)+len(win)) > limit {
			return nil, ErrHeaderTooLarge
		}
		if len(win) == br.Size() {
			// The buffer is full: move its bytes out and read on.
			acc = append(acc, win...)
			br.Discard(len(win))
			scan = 0
			continue
		}
		if _, err = br.Peek(len(win) + 1); err != nil && br.Buffered() == len(win) {
			return nil, headReadError(err, false, status)
		}
	}
}

// headByte returns byte i of the head made of acc followed by win.
func headByte(acc, win []byte, i int) byte {
	if i < len(acc) {
		return acc[i]
	}
	return win[i-len(acc)]
}

// headReadError names a read error met before a head's end.
func headReadError(err error, none, status bool) error {
	if err == io.EOF {
		switch {
		case none:
			return fmt.Errorf("h1: reading response: %w (%w)", io.ErrUnexpectedEOF, ErrNoResponse)
		case !status:
			return fmt.Errorf("h1: reading trailer: %w", errTrailerEOF)
		}
		return fmt.Errorf("h1: reading response header: %w", io.ErrUnexpectedEOF)
	}
	if status {
		return fmt.Errorf("h1: reading response header: %w", err)
	}
	return fmt.Errorf("h1: reading trailer: %w", err)
}

// span is one header field in a head: the offsets of its key and value.
// A value folded over several lines (obs-fold) has fold set and its
// value offsets span the lines from the first line's value to the end of
// the last continuation line.
type span struct {
	ks, ke int32
	vs, ve int32
	fold   bool
	canon  bool // the key is canonicalized in the built string
}

// parsed is a head parsed and validated, before any allocation.
type parsed struct {
	protoEnd, statusStart, statusEnd int
	code, major, minor               int
	fields                           []span // backed by the caller's array
}

// smallHead is the number of fields parsed without allocating.
const smallHead = 32

// parse splits and validates head as net/textproto's ReadMIMEHeader
// (after, with status, the status line as http.ReadResponse reads it).
//
// The fields are appended to fields and returned (not stored through p,
// which would move the caller's array to the heap).
func (p *parsed) parse(head []byte, status bool, fields []span) ([]span, error) {
	rest := head
	if status {
		line, next := cutLine(rest)
		rest = next
		if err := p.statusLine(line); err != nil {
			return nil, err
		}
		// The first header line cannot start with white space.
		if len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\t') {
			l, _ := cutLine(rest)
			return nil, malformed("malformed MIME header initial line", string(l))
		}
	} else if len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\t') {
		l, _ := cutLine(rest)
		return nil, malformed("malformed MIME header initial line", string(l))
	}
	for {
		start := len(head) - len(rest)
		line, next := cutLine(rest)
		if len(line) == 0 {
			return fields, nil // the empty line ending the head
		}
		rest = next
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			return nil, malformed("malformed MIME header: missing colon", string(line))
		}
		key := line[:colon]
		f := span{ks: int32(start), ke: int32(start + colon)}
		ok, canon := validKey(key)
		if !ok {
			return nil, malformed("malformed MIME header line", string(line))
		}
		f.canon = canon
		val := trim(line[colon+1:])
		if err := validValue(val, line); err != nil {
			return nil, err
		}
		vs := start + colon + 1
		for vs < start+len(line) && (head[vs] == ' ' || head[vs] == '\t') {
			vs++
		}
		f.vs = int32(vs)
		f.ve = int32(vs + len(trimLeft(val)))
		// Continuation lines (obs-fold) start with a space or tab.
		for len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\t') {
			cstart := len(head) - len(rest)
			c, next := cutLine(rest)
			rest = next
			if err := validValue(trim(c), line); err != nil {
				return nil, err
			}
			f.fold = true
			f.ve = int32(cstart + len(c))
		}
		fields = append(fields, f)
	}
}

// statusLine parses the status line as http.ReadResponse: proto, one
// space, optional spaces, a three-character status code and the rest.
func (p *parsed) statusLine(line []byte) error {
	sp := bytes.IndexByte(line, ' ')
	if sp < 0 {
		return malformed("malformed HTTP response", string(line))
	}
	p.protoEnd = sp
	st := sp + 1
	for st < len(line) && line[st] == ' ' {
		st++
	}
	p.statusStart, p.statusEnd = st, len(line)
	code := line[st:]
	if i := bytes.IndexByte(code, ' '); i >= 0 {
		code = code[:i]
	}
	c, ok := parseStatusCode(code)
	if !ok {
		return malformed("malformed HTTP status code", string(code))
	}
	p.code = c
	if p.major, p.minor, ok = parseVersion(line[:sp]); !ok {
		return malformed("malformed HTTP version", string(line[:sp]))
	}
	return nil
}

// parseStatusCode accepts what strconv.Atoi accepts in three bytes with a
// result >= 0, as http.ReadResponse: "200", "+99", even "-00".
func parseStatusCode(b []byte) (int, bool) {
	if len(b) != 3 {
		return 0, false
	}
	neg := false
	d := b
	switch b[0] {
	case '+':
		d = b[1:]
	case '-':
		neg, d = true, b[1:]
	}
	n := 0
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if neg && n != 0 {
		return 0, false
	}
	return n, true
}

// parseVersion is http.ParseHTTPVersion on bytes: "HTTP/" then one digit,
// a dot and one digit.
func parseVersion(v []byte) (major, minor int, ok bool) {
	if len(v) != len("HTTP/X.Y") || string(v[:5]) != "HTTP/" || v[6] != '.' {
		return 0, 0, false
	}
	if v[5] < '0' || v[5] > '9' || v[7] < '0' || v[7] > '9' {
		return 0, 0, false
	}
	return int(v[5] - '0'), int(v[7] - '0'), true
}

// cutLine returns the first line of b without its LF and one CR before
// it, and the bytes after the LF.
func cutLine(b []byte) (line, rest []byte) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return b, nil
	}
	line, rest = b[:i], b[i+1:]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, rest
}

// trim removes leading and trailing spaces and tabs.
func trim(b []byte) []byte {
	return trimRight(trimLeft(b))
}

func trimLeft(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

func trimRight(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// validKey reports whether key is a field name net/textproto accepts:
// token bytes, or token bytes and spaces (go.dev/issue/34540), which are
// kept as they are; canon says the key is to be canonicalized.
func validKey(key []byte) (ok, canon bool) {
	if len(key) == 0 {
		return false, false
	}
	canon = true
	for _, c := range key {
		if c == ' ' {
			canon = false
			continue
		}
		if !tokenByte(c) {
			return false, false
		}
	}
	return true, canon
}

// validValue checks that every byte of v may appear in a field value:
// SP, HT, VCHAR or obs-text (RFC 9110, section 5.5).
func validValue(v, line []byte) error {
	for _, c := range v {
		if c < ' ' && c != '\t' || c == 0x7f {
			return malformed("malformed MIME header line", string(line))
		}
	}
	return nil
}

// tokenByte reports whether c is a tchar (RFC 9110, section 5.6.2).
func tokenByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// build copies head into one string, with the keys to canonicalize
// canonicalized in place (the same length), so that every key and
// unfolded value is a substring of it.
func (p *parsed) build(head []byte) string {
	var sb strings.Builder
	sb.Grow(len(head))
	at := 0
	for _, f := range p.fields {
		if !f.canon {
			continue
		}
		sb.Write(head[at:f.ks])
		upper := true
		for _, c := range head[f.ks:f.ke] {
			if upper && 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			} else if !upper && 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			sb.WriteByte(c)
			upper = c == '-'
		}
		at = int(f.ke)
	}
	sb.Write(head[at:])
	return sb.String()
}

// header builds the header map from s, the string built from the head;
// vals is spare room for the values.
func (p *parsed) header(s string, vals []string) http.Header {
	n := len(p.fields)
	h := make(http.Header, n)
	if n == 0 {
		return h
	}
	if n > len(vals) {
		vals = make([]string, n)
	}
	vals = vals[:n]
	for i, f := range p.fields {
		key := s[f.ks:f.ke]
		val := s[f.vs:f.ve]
		if f.fold {
			val = unfold(val)
		}
		if vv, ok := h[key]; ok {
			h[key] = append(vv, val)
			continue
		}
		// Reserve room for every later value of the key (counted only in
		// small heads), so that appending them allocates nothing.
		k := 1
		if n <= smallHead {
			for _, g := range p.fields[i+1:] {
				if s[g.ks:g.ke] == key {
					k++
				}
			}
		}
		vv := vals[:1:k]
		vals = vals[k:]
		vv[0] = val
		h[key] = vv
	}
	return h
}

// unfold joins a value folded over lines as net/textproto does: each
// line trimmed of spaces and tabs, joined by one space, and the result
// trimmed on the left.
func unfold(v string) string {
	var b []byte
	for i := 0; ; i++ {
		line, rest, more := strings.Cut(v, "\n")
		line = strings.TrimSuffix(line, "\r")
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, trim([]byte(line))...)
		if !more {
			break
		}
		v = rest
	}
	return string(trimLeft(b))
}
