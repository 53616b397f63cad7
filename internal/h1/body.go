package h1

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sync"
)

// DrainLimit is the most body bytes Close discards to finish a body
// early, and only from bytes already in the reader's buffer, so that
// the connection can carry another request.
const DrainLimit = 4 << 10

// maxChunkLine is net/http's bound on a chunk-size line (without CRLF).
const maxChunkLine = 4096

var (
	errTrailerEOF     = errors.New("unexpected EOF reading trailer")
	errWouldBlock     = errors.New("h1: body end not buffered")
	errConcurrentRead = errors.New("h1: concurrent Read on response body")
)

// Body is the body of a response read by ReadResponse: Content-Length,
// chunked (with trailers) or close-delimited framing read from the
// connection's *bufio.Reader, or no body for a 101 response.
//
// When the body ends, Read returns io.EOF and the owner is told
// BodyDone(reuse), reuse true when the framing allows another response on
// the connection (not close-delimited, resp.Close false) and no byte is
// left in the reader. A read error (io.ErrUnexpectedEOF for a short body,
// a malformed chunk, the connection's deadline) is returned, stays, and
// tells the owner BodyDone(false). A chunked body's trailer fills
// resp.Trailer before Read returns io.EOF.
//
// Close before the end finishes the body only from bytes already
// buffered, at most DrainLimit bytes of it, and tells the owner whether
// that reached the end; Close while another goroutine is blocked in Read
// tells the owner BodyDone(false) at once without touching the reader,
// and the owner then closes the connection, which ends that Read. The
// owner is told exactly once. Read after Close returns ErrBodyClosed.
type Body struct {
	br    *bufio.Reader
	resp  *http.Response
	owner Owner
	kind  uint8
	keep  bool // the framing allows another response (as resp.Close was)

	mu      sync.Mutex
	reading bool  // a Read is using br without holding mu
	closed  bool  // Close was called
	done    bool  // the owner was (or is being) told
	err     error // io.EOF at the end, or the read error; it stays

	// Owned by the goroutine using br (a Read with reading set, or Close
	// with mu held).
	left     uint64 // body bytes left (Content-Length) or in the chunk
	checkEnd bool   // the CRLF after a chunk's data is to be read
	excess   int64  // chunk framing beyond what net/http tolerates
}

func (b *Body) init(kind uint8, n int64, br *bufio.Reader, resp *http.Response, owner Owner) {
	b.kind = kind
	b.left = uint64(n)
	b.br = br
	b.resp = resp
	b.owner = owner
	b.keep = !resp.Close && kind != bodyEOF
}

// Read reads the body.
func (b *Body) Read(p []byte) (int, error) {
	b.mu.Lock()
	switch {
	case b.closed:
		b.mu.Unlock()
		return 0, ErrBodyClosed
	case b.err != nil:
		err := b.err
		b.mu.Unlock()
		return 0, err
	case b.kind == bodyUpgrade:
		b.mu.Unlock()
		return 0, io.EOF
	case b.reading:
		b.mu.Unlock()
		return 0, errConcurrentRead
	case len(p) == 0:
		b.mu.Unlock()
		return 0, nil
	}
	b.reading = true
	b.mu.Unlock()

	var n int
	var err error
	switch b.kind {
	case bodyLength:
		n, err = b.readLength(p)
	case bodyChunked:
		n, err = b.readChunked(p, false)
	default:
		n, err = b.br.Read(p)
	}

	b.mu.Lock()
	b.reading = false
	if b.closed {
		// Close ran while this Read used br and has told the owner.
		b.mu.Unlock()
		if err == nil && n == 0 {
			err = ErrBodyClosed
		}
		return n, err
	}
	if err == nil {
		b.mu.Unlock()
		return n, nil
	}
	b.err = err
	b.done = true
	reuse := err == io.EOF && b.reusable()
	b.mu.Unlock()
	b.tell(reuse)
	return n, err
}

// Close ends the body; see Body.
func (b *Body) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	if b.done {
		b.mu.Unlock()
		return nil
	}
	b.done = true
	reuse := false
	if !b.reading {
		reuse = b.drain()
	}
	b.mu.Unlock()
	b.tell(reuse)
	return nil
}

func (b *Body) tell(reuse bool) {
	if b.owner != nil {
		b.owner.BodyDone(reuse)
	}
}

// reusable reports whether the connection can carry another response
// once this body has ended.
func (b *Body) reusable() bool {
	return b.keep && b.br.Buffered() == 0
}

// drain tries to finish the body from buffered bytes only and reports
// whether the connection can be reused. b.mu is held and no Read runs.
func (b *Body) drain() bool {
	switch b.kind {
	case bodyLength:
		if b.left > DrainLimit || uint64(b.br.Buffered()) < b.left {
			return false
		}
		b.br.Discard(int(b.left))
		b.left = 0
	case bodyChunked:
		if _, err := b.readChunked(nil, true); err != io.EOF {
			return false
		}
	default:
		return false
	}
	return b.reusable()
}

// readLength reads a Content-Length body as net/http does: io.EOF with
// the last bytes, io.ErrUnexpectedEOF when the connection ends first.
func (b *Body) readLength(p []byte) (int, error) {
	if uint64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.br.Read(p)
	b.left -= uint64(n)
	if b.left == 0 {
		return n, io.EOF
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// readChunked reads chunked data into p as net/http's chunked reader
// does (net/http/internal/chunked.go), then the trailer. With drain, p is
// nil: chunk data is discarded, at most DrainLimit bytes of it, and
// errWouldBlock is returned where reading on would need bytes that are
// not buffered.
func (b *Body) readChunked(p []byte, drain bool) (n int, err error) {
	br := b.br
	for {
		if b.checkEnd {
			if !drain && n > 0 && br.Buffered() < 2 {
				// Return the data rather than block on the CRLF.
				return n, nil
			}
			if drain && br.Buffered() < 2 {
				return n, errWouldBlock
			}
			var crlf [2]byte
			if _, err := io.ReadFull(br, crlf[:]); err != nil {
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				return n, err
			}
			if crlf != [2]byte{'\r', '\n'} {
				return n, fmt.Errorf("h1: malformed chunked encoding: %q after chunk data: %w", crlf[:], ErrMalformed)
			}
			b.checkEnd = false
		}
		if b.left == 0 {
			if !lineBuffered(br) {
				if drain {
					return n, errWouldBlock
				}
				if n > 0 {
					return n, nil // do not block on the next chunk's size
				}
			}
			err := b.beginChunk()
			if err == io.EOF {
				if err = b.readTrailer(drain); err == nil {
					err = io.EOF
				}
			}
			if err != nil {
				return n, err
			}
			continue
		}
		if drain {
			k := min(b.left, uint64(br.Buffered()), uint64(DrainLimit-n))
			if k == 0 {
				return n, errWouldBlock
			}
			br.Discard(int(k))
			n += int(k)
			b.left -= k
			if b.left == 0 {
				b.checkEnd = true
			}
			continue
		}
		if len(p) == 0 {
			return n, nil
		}
		q := p
		if uint64(len(q)) > b.left {
			q = q[:b.left]
		}
		m, err := br.Read(q)
		n += m
		p = p[m:]
		b.left -= uint64(m)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return n, err
		}
		if b.left == 0 {
			b.checkEnd = true
		}
	}
}

// lineBuffered reports whether a whole line is in br's buffer.
func lineBuffered(br *bufio.Reader) bool {
	buf, _ := br.Peek(br.Buffered())
	return bytes.IndexByte(buf, '\n') >= 0
}

// beginChunk reads a chunk-size line: CRLF-terminated with no other CR,
// shorter than 4 KiB, extensions after ';' ignored, at most 16 hex
// digits; io.EOF for the last chunk. Like net/http, it refuses a body
// whose framing overhead exceeds 16 bytes per chunk plus twice its data
// by more than 16 KiB.
func (b *Body) beginChunk() error {
	line, err := b.br.ReadSlice('\n')
	if err != nil {
		switch err {
		case io.EOF:
			return io.ErrUnexpectedEOF
		case bufio.ErrBufferFull:
			return fmt.Errorf("h1: chunk-size line too long: %w", ErrMalformed)
		}
		return err
	}
	if i := bytes.IndexByte(line, '\r'); i < 0 {
		return malformed("chunk-size line ends with bare LF", string(line))
	} else if i != len(line)-2 {
		return malformed("invalid CR in chunk-size line", string(line))
	}
	line = line[:len(line)-2]
	if len(line) >= maxChunkLine {
		return fmt.Errorf("h1: chunk-size line too long: %w", ErrMalformed)
	}
	b.excess += int64(len(line)) + 2
	size := trimRight(line)
	if i := bytes.IndexByte(size, ';'); i >= 0 {
		size = size[:i]
	}
	n, err := parseHex(size)
	if err != nil {
		return err
	}
	b.left = n
	b.excess -= 16 + 2*int64(n)
	b.excess = max(b.excess, 0)
	if n == 0 {
		return io.EOF
	}
	if b.excess > 16<<10 {
		return fmt.Errorf("h1: chunked encoding contains too much non-data: %w", ErrMalformed)
	}
	return nil
}

// parseHex parses a chunk size: 1 to 16 hex digits.
func parseHex(v []byte) (uint64, error) {
	if len(v) == 0 {
		return 0, fmt.Errorf("h1: empty hex number for chunk length: %w", ErrMalformed)
	}
	var n uint64
	for i, c := range v {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, malformed("invalid byte in chunk length", string(v))
		}
		if i == 16 {
			return 0, malformed("chunk length too large", string(v))
		}
		n = n<<4 | uint64(c)
	}
	return n, nil
}

// readTrailer reads the trailer after the last chunk as net/http does:
// a lone CRLF, or header lines whose "\r\n\r\n" must lie within br's
// buffer size, merged into resp.Trailer.
func (b *Body) readTrailer(drain bool) error {
	br := b.br
	if drain && br.Buffered() < 2 {
		return errWouldBlock
	}
	buf, err := br.Peek(2)
	if len(buf) == 2 && buf[0] == '\r' && buf[1] == '\n' {
		br.Discard(2)
		return nil
	}
	if len(buf) < 2 {
		return fmt.Errorf("h1: reading trailer: %w", errTrailerEOF)
	}
	if err != nil {
		return err
	}
	if !seeDoubleCRLF(br, drain) {
		if drain {
			return errWouldBlock
		}
		return fmt.Errorf("h1: suspiciously long trailer after chunked body: %w", ErrMalformed)
	}
	head, err := readHead(br, math.MaxInt64, false, false)
	if err != nil {
		return err
	}
	var small [smallHead]span
	var p parsed
	if p.fields, err = p.parse(head, false, small[:0]); err != nil {
		discard(br, head)
		return err
	}
	s := p.build(head)
	discard(br, head)
	h := p.header(s, nil)
	if b.resp.Trailer == nil {
		b.resp.Trailer = h
		return nil
	}
	for k, v := range h {
		b.resp.Trailer[k] = v
	}
	return nil
}

// seeDoubleCRLF reports whether "\r\n\r\n" lies within the next
// br.Size() bytes (only the buffered ones with drain), reading as needed:
// net/http's bound on a trailer's size.
func seeDoubleCRLF(br *bufio.Reader, drain bool) bool {
	for {
		n := br.Buffered()
		buf, _ := br.Peek(n)
		if bytes.Contains(buf, []byte("\r\n\r\n")) {
			return true
		}
		if drain || n >= br.Size() {
			return false
		}
		if _, err := br.Peek(n + 1); err != nil && br.Buffered() == n {
			return false
		}
	}
}
