package faults

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxRequestBody bounds the request body a fault reads; the rest of a
// larger one is left unread and the connection closed.
const maxRequestBody = 1 << 20

// serveConn reads requests on c and answers each with the fault its path
// names, until a fault ends the connection or the client closes it. tcp is
// c as a TCP connection, nil on TLS: the resets need it.
func (s *Server) serveConn(c net.Conn, tcp *net.TCPConn) {
	br := bufio.NewReader(c)
	bw := bufio.NewWriter(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return // the client closed, or sent garbage
		}
		n, _ := io.Copy(io.Discard, io.LimitReader(req.Body, maxRequestBody+1))
		req.Body.Close()
		if n > maxRequestBody {
			return
		}
		f, ok := strings.CutPrefix(req.URL.Path, "/fault/")
		fault := Fault(f)
		if !ok || !fault.known() {
			writeStatus(bw, http.StatusNotFound, nil, `{"errors":[{"message":"faults: no such fault"}]}`)
			if bw.Flush() != nil || req.Close {
				return
			}
			continue
		}
		s.count(fault)
		if !s.answer(fault, c, tcp, bw) || req.Close {
			return
		}
	}
}

// answer writes fault f. It reports whether the connection may carry the
// next request.
func (s *Server) answer(f Fault, c net.Conn, tcp *net.TCPConn, bw *bufio.Writer) bool {
	switch f {
	case None:
		writeStatus(bw, http.StatusOK, nil, `{"data":{"ok":true}}`)
		return bw.Flush() == nil

	case ServerError:
		writeStatus(bw, http.StatusServiceUnavailable, nil, `{"errors":[{"message":"faults: server error"}]}`)
		return bw.Flush() == nil

	case TooManyRequests:
		secs := int((s.opts.retryAfter() + time.Second - 1) / time.Second)
		writeStatus(bw, http.StatusTooManyRequests, []string{"Retry-After: " + strconv.Itoa(secs)}, `{"errors":[{"message":"faults: too many requests"}]}`)
		return bw.Flush() == nil

	case RedirectLoop:
		writeStatus(bw, http.StatusTemporaryRedirect, []string{"Location: " + RedirectLoop.Path()}, "")
		return bw.Flush() == nil

	case ResetBeforeHeaders:
		reset(c, tcp)
		return false

	case ResetMidBody:
		head(bw, http.StatusOK, "Content-Length: 1024")
		bw.WriteString(strings.Repeat("r", 100))
		if bw.Flush() != nil {
			return false
		}
		if tcp != nil {
			// A reset throws away what the kernel has not sent yet: wait
			// until the client has the 100 bytes, so that it sees a
			// response and then a reset, never a reset alone.
			waitAcked(tcp, s.opts.ackWait())
		}
		reset(c, tcp)
		return false

	case NoHeaders:
		waitGone(c)
		return false

	case BodyStall:
		head(bw, http.StatusOK, "Content-Length: 1024")
		bw.WriteString(strings.Repeat("s", 16))
		if bw.Flush() == nil {
			waitGone(c)
		}
		return false

	case WrongContentLength:
		head(bw, http.StatusOK, "Content-Length: 1024")
		bw.WriteString(`{"data":{}}`[:10])
		bw.Flush()
		return false // the deferred Close sends a FIN

	case TruncatedChunked:
		head(bw, http.StatusOK, "Transfer-Encoding: chunked")
		bw.WriteString("b\r\n{\"data\":{}}\r\n") // one whole chunk of 11 bytes
		bw.WriteString("10\r\n{\"more\":")       // 16 announced, 8 sent
		bw.Flush()
		return false

	case OversizedHeaders:
		s.oversized(bw)
		return false

	case EndlessBody:
		s.endless(bw)
		return false
	}
	// Refused and TLSHandshake have their own ports; their path on the
	// plain port answers like None so that a client that reached it can
	// tell.
	writeStatus(bw, http.StatusOK, nil, `{"data":{"ok":true}}`)
	return bw.Flush() == nil
}

// head writes a status line and the given header lines, and ends the
// header block.
func head(bw *bufio.Writer, status int, lines ...string) {
	fmt.Fprintf(bw, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	bw.WriteString("Content-Type: application/json\r\n")
	for _, l := range lines {
		bw.WriteString(l + "\r\n")
	}
	bw.WriteString("\r\n")
}

// writeStatus writes a whole response with a Content-Length body.
func writeStatus(bw *bufio.Writer, status int, lines []string, body string) {
	head(bw, status, append(lines, "Content-Length: "+strconv.Itoa(len(body)))...)
	bw.WriteString(body)
}

// reset closes c with a TCP RST instead of a FIN: SO_LINGER 0 makes the
// kernel drop unsent data and answer with a reset.
func reset(c net.Conn, tcp *net.TCPConn) {
	if tcp != nil {
		tcp.SetLinger(0)
	}
	c.Close()
}

// oversized writes Options.HeaderBytes of header lines of 1 KiB each. A
// client over its limit stops reading and closes, which fails the next
// write; one with a higher limit gets an empty 200.
func (s *Server) oversized(bw *bufio.Writer) {
	fmt.Fprintf(bw, "HTTP/1.1 %d %s\r\n", http.StatusOK, http.StatusText(http.StatusOK))
	filler := strings.Repeat("x", 1024-len("X-Fill-0000000: \r\n"))
	for i, sent := 0, 0; sent < s.opts.headerBytes(); i++ {
		n, err := fmt.Fprintf(bw, "X-Fill-%07d: %s\r\n", i, filler)
		if err != nil {
			return // a write failed: the client is gone
		}
		sent += n
	}
	bw.WriteString("Content-Length: 0\r\n\r\n")
	bw.Flush()
}

// endless streams 32 KiB chunks until a write fails (the client went away
// or Close closed the connection) or the cap is reached; the connection
// then closes without the terminating chunk.
func (s *Server) endless(bw *bufio.Writer) {
	head(bw, http.StatusOK, "Transfer-Encoding: chunked")
	chunk := strings.Repeat("e", 32<<10)
	for sent := int64(0); sent < s.opts.endlessCap(); sent += int64(len(chunk)) {
		fmt.Fprintf(bw, "%x\r\n%s\r\n", len(chunk), chunk)
		if bw.Flush() != nil {
			return
		}
	}
}
