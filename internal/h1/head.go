package h1

// The head of a response or a trailer: read from the connection's reader,
// checked line by line as net/textproto reads them, and made into the
// status, a Header and one string that holds them.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unsafe"
)

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
func (p *parsed) build(head []byte) string { return p.buildIn(head, nil) }

// buildIn is build into room when head fits in it, else into new memory.
// The string aliases room: the caller never writes room again.
func (p *parsed) buildIn(head, room []byte) string {
	var b []byte
	if len(head) <= len(room) {
		b = room[:0:len(head)]
	} else {
		b = make([]byte, 0, len(head))
	}
	at := 0
	for _, f := range p.fields {
		if !f.canon {
			continue
		}
		b = append(b, head[at:f.ks]...)
		upper := true
		for _, c := range head[f.ks:f.ke] {
			if upper && 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			} else if !upper && 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b = append(b, c)
			upper = c == '-'
		}
		at = int(f.ke)
	}
	b = append(b, head[at:]...)
	// The bytes are never written again: the string may alias them.
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// header builds the header map from s, the string built from the head;
// vals is spare room for the values.
func (p *parsed) header(s string, vals []string) http.Header {
	return p.headerIn(nil, s, vals)
}

// headerIn is header into h, an empty map, when h is not nil.
func (p *parsed) headerIn(h http.Header, s string, vals []string) http.Header {
	n := len(p.fields)
	if h == nil {
		h = make(http.Header, n)
	}
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
