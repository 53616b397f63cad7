package h1

import (
	"bufio"
	"errors"
	"fmt"
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
	return ReadResponseIn(br, req, maxHeaderBytes, owner, nil)
}

// Lent is the memory of a response that its reader gives back once done
// with it: ReadResponseIn reads a response into it, the Response, its
// Body, its Header map and the strings of its head, instead of allocating
// them. It is for a caller that holds the response for a bounded time
// (the transport's PostFunc). A zero Lent is ready to use.
//
// Ownership: one response at a time. From ReadResponseIn until Reset, the
// Response and everything reachable from it (Header strings included)
// live in the Lent; Reset makes them another response's, so the caller
// must have closed the Body and let go of the Response before.
type Lent struct {
	rb     respBody
	header http.Header // kept across responses, emptied by Reset; nil until first used
	room   []byte      // the head's bytes; kept across responses, grown to the largest head read
}

// Reset empties l for the next response.
func (l *Lent) Reset() {
	clear(l.header)
	l.rb = respBody{}
}

// ReadResponseIn is ReadResponse into in (see Lent); with in nil it
// allocates as ReadResponse does. in must be empty (new, or Reset).
func ReadResponseIn(br *bufio.Reader, req *http.Request, maxHeaderBytes int64, owner Owner, in *Lent) (*http.Response, error) {
	if maxHeaderBytes <= 0 {
		maxHeaderBytes = DefaultMaxHeaderBytes
	}
	limit := maxHeaderBytes
	first := true
	for {
		resp, n, err := readOne(br, req, limit, owner, first, in)
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
			if in != nil {
				in.Reset()
			}
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

// The bytes of a head, which every header string is sliced from
// (parsed.buildIn), go in the Response's own allocation when they fit in
// one of these, each the room that a respBody leaves in a size class of
// the allocator (on 64-bit platforms: 448, 512, and 640 bytes, counting
// the 8-byte header the allocator puts before an object with pointers
// larger than 512 bytes); a larger head takes an allocation of its own.
type (
	respRoomS struct {
		rb   respBody
		room [88]byte
	}
	respRoomM struct {
		rb   respBody
		room [152]byte
	}
	respRoomL struct {
		rb   respBody
		room [272]byte
	}
)

// newRespBody allocates a respBody with room for a head of n bytes, if
// one of the sizes above holds it; room is nil if not.
func newRespBody(n int) (rb *respBody, room []byte) {
	switch {
	case n <= len(respRoomS{}.room):
		r := new(respRoomS)
		return &r.rb, r.room[:]
	case n <= len(respRoomM{}.room):
		r := new(respRoomM)
		return &r.rb, r.room[:]
	case n <= len(respRoomL{}.room):
		r := new(respRoomL)
		return &r.rb, r.room[:]
	}
	return new(respBody), nil
}

// readOne reads one response head from br and prepares its body, as
// http.ReadResponse does; n is the size of the head. limit bounds the
// head's size. first says whether this is the first response read for
// the request (for the error naming an empty connection).
func readOne(br *bufio.Reader, req *http.Request, limit int64, owner Owner, first bool, in *Lent) (resp *http.Response, n int64, err error) {
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
	var rb *respBody
	var room []byte
	var h http.Header
	if in != nil {
		rb = &in.rb
		if in.header == nil {
			in.header = make(http.Header, len(p.fields))
		}
		h = in.header
		if cap(in.room) < len(head) {
			in.room = make([]byte, len(head))
		}
		room = in.room[:cap(in.room)]
	} else {
		rb, room = newRespBody(len(head))
	}
	resp = &rb.resp
	// The head's bytes are copied once into the string every header
	// string is sliced from; head may alias br's buffer, so copy before
	// discarding it.
	s := p.buildIn(head, room)
	discard(br, head)
	h = p.headerIn(h, s, rb.vals[:])
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
// Trailer and Body, in readTransfer's steps: the connection's close, the
// Transfer-Encoding, the length (fixLength), the trailer (fixTrailer),
// then the body.
func (rb *respBody) transfer(req *http.Request, br *bufio.Reader, owner Owner) error {
	resp := &rb.resp
	h := resp.Header
	isHead := req != nil && req.Method == "HEAD"
	// net/http computes Close from the version as sent, then treats
	// HTTP/0.0 as HTTP/1.1 for the rest.
	resp.Close = shouldClose(resp.ProtoMajor, resp.ProtoMinor, h)
	major, minor := resp.ProtoMajor, resp.ProtoMinor
	if major == 0 && minor == 0 {
		major, minor = 1, 1
	}
	chunked, err := transferEncoding(h, major, minor)
	if err != nil {
		return err
	}
	cls, n, err := contentLength(h)
	if err != nil {
		return err
	}
	bodyAllowed := bodyAllowedForStatus(resp.StatusCode)
	realLength := wireLength(isHead, bodyAllowed, chunked, cls, n, h)
	resp.ContentLength = realLength
	if isHead {
		// A HEAD response reports the length the GET would have had.
		resp.ContentLength = -1
		if len(cls) > 0 {
			resp.ContentLength = n
		}
	}
	if vv, ok := h["Trailer"]; ok && chunked {
		// As net/http's fixTrailer: only with chunked framing.
		delete(h, "Trailer")
		if resp.Trailer, err = trailerKeys(vv); err != nil {
			return err
		}
	}
	if realLength == -1 && !chunked && bodyAllowed {
		resp.Close = true // the body ends with the connection
	}
	if chunked {
		resp.TransferEncoding = []string{"chunked"}
	}
	rb.initBody(isHead, bodyAllowed, chunked, realLength, br, owner)
	return nil
}

// transferEncoding reads and removes the Transfer-Encoding field of h: it
// is always removed; HTTP/1.0 and older ignore it (go.dev/issue/12785);
// otherwise only one field whose value is "chunked" is accepted.
func transferEncoding(h http.Header, major, minor int) (chunked bool, err error) {
	te, ok := h["Transfer-Encoding"]
	if !ok {
		return false, nil
	}
	delete(h, "Transfer-Encoding")
	if major < 1 || major == 1 && minor < 1 {
		return false, nil
	}
	if len(te) != 1 {
		return false, malformed("too many transfer encodings", strings.Join(te, ","))
	}
	if !asciiEqualFold(te[0], "chunked") {
		return false, malformed("unsupported transfer encoding", te[0])
	}
	return true, nil
}

// contentLength reads the Content-Length fields of h as net/http's
// fixLength: several must agree, and then collapse into one value,
// trimmed; n is the value's length when cls is not empty.
func contentLength(h http.Header) (cls []string, n int64, err error) {
	cls = h["Content-Length"]
	if len(cls) > 1 {
		first := trimString(cls[0])
		for _, v := range cls[1:] {
			if trimString(v) != first {
				return nil, 0, malformed("multiple Content-Length headers", strings.Join(cls, ","))
			}
		}
		cls = cls[:1:1]
		cls[0] = first
		h["Content-Length"] = cls
	}
	if len(cls) > 0 {
		if n, err = parseContentLength(cls[0]); err != nil {
			return nil, 0, err
		}
	}
	return cls, n, nil
}

// wireLength is the length of the body on the wire, as fixLength decides
// it: 0 for a HEAD answer or a status without a body, -1 when chunked
// (Content-Length then goes from h) or when nothing gives it, else n.
func wireLength(isHead, bodyAllowed, chunked bool, cls []string, n int64, h http.Header) int64 {
	switch {
	case isHead || !bodyAllowed:
		return 0
	case chunked:
		delete(h, "Content-Length")
		return -1
	case len(cls) > 0:
		return n
	}
	return -1
}

// trailerKeys is net/http's fixTrailer over the Trailer field's values
// vv: the declared names, canonical, with nil values; a name that frames
// the message is refused.
func trailerKeys(vv []string) (http.Header, error) {
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
		return nil, err
	}
	return trailer, nil
}

// initBody sets rb.resp.Body for the framing transfer decided:
// http.NoBody when there is none, else rb.body reading it from br.
func (rb *respBody) initBody(isHead, bodyAllowed, chunked bool, realLength int64, br *bufio.Reader, owner Owner) {
	resp, b := &rb.resp, &rb.body
	switch {
	case resp.StatusCode == http.StatusSwitchingProtocols:
		b.init(bodyUpgrade, 0, br, resp, owner)
	case chunked && (isHead || !bodyAllowed), realLength == 0:
		resp.Body = http.NoBody
		return
	case chunked:
		b.init(bodyChunked, 0, br, resp, owner)
	case realLength > 0:
		b.init(bodyLength, realLength, br, resp, owner)
	default:
		// realLength < 0 without chunked: resp.Close is set by transfer.
		b.init(bodyEOF, 0, br, resp, owner)
	}
	resp.Body = b
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
