package wiretest

import (
	"net"
	"testing"
)

// Frame is the header of one HTTP/2 frame (RFC 9113, section 4.1).
type Frame struct {
	Length int // of the payload
	Type   byte
	Flags  byte
	Stream uint32
}

const (
	h2Preface   = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	h2FrameHead = 9
	h2FramePing = 0x6
	h2FlagAck   = 0x1
)

// IsPing reports whether f is a PING that asks for an answer: one without
// the ACK flag.
func (f Frame) IsPing() bool { return f.Type == h2FramePing && f.Flags&h2FlagAck == 0 }

// FrameReader is the server's end of a connection whose client speaks
// HTTP/2: it reads the client connection preface, then frames of a 9-byte
// header (length, type, flags, stream) and a payload. It hands its reader
// whole frames only, so that it can leave some out: a frame for which
// Filter returns false never reaches the reader.
type FrameReader struct {
	net.Conn
	Filter func(Frame) bool // nil: every frame passes

	scratch [4096]byte
	in, out []byte
	preface bool
	err     error
}

// Read returns the bytes of the preface and of the frames that passed
// Filter; it blocks until a whole frame has come in.
func (c *FrameReader) Read(p []byte) (int, error) {
	for len(c.out) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		n, err := c.Conn.Read(c.scratch[:])
		c.in = append(c.in, c.scratch[:n]...)
		c.parse()
		c.err = err
	}
	n := copy(p, c.out)
	c.out = c.out[n:]
	return n, nil
}

// parse moves the preface and each whole frame from in to out, through
// Filter.
func (c *FrameReader) parse() {
	for {
		if !c.preface {
			if len(c.in) < len(h2Preface) {
				return
			}
			c.out = append(c.out, c.in[:len(h2Preface)]...)
			c.in, c.preface = c.in[len(h2Preface):], true
		}
		if len(c.in) < h2FrameHead {
			return
		}
		f := Frame{
			Length: int(c.in[0])<<16 | int(c.in[1])<<8 | int(c.in[2]),
			Type:   c.in[3],
			Flags:  c.in[4],
			Stream: (uint32(c.in[5])<<24 | uint32(c.in[6])<<16 | uint32(c.in[7])<<8 | uint32(c.in[8])) &^ (1 << 31),
		}
		size := h2FrameHead + f.Length
		if len(c.in) < size {
			return
		}
		if c.Filter == nil || c.Filter(f) {
			c.out = append(c.out, c.in[:size]...)
		}
		c.in = c.in[size:]
	}
}

// PingListener wraps each connection a server accepts in a FrameReader
// that reports every PING which is not an ACK on Pings, when Pings has
// room; with Drop, it also keeps the PING from the server, which then
// never answers it.
type PingListener struct {
	net.Listener
	Pings chan struct{}
	Drop  bool
}

// Accept waits for the next connection and returns it in a FrameReader.
func (l *PingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &FrameReader{Conn: c, Filter: l.filter}, nil
}

func (l *PingListener) filter(f Frame) bool {
	if !f.IsPing() {
		return true
	}
	select {
	case l.Pings <- struct{}{}:
	default:
	}
	return !l.Drop
}

// NewPingServer starts an h2c-only Server behind a PingListener whose Pings
// has room for one; with drop, the server never sees a PING.
func NewPingServer(t testing.TB, drop bool) (*Server, *PingListener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pl := &PingListener{Listener: ln, Pings: make(chan struct{}, 1), Drop: drop}
	return NewServer(t, Options{H2COnly: true, Listener: pl, URL: "http://" + ln.Addr().String() + "/graphql"}), pl
}
