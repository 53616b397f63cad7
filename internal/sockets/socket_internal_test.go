//go:build unix

package sockets

import (
	"crypto/tls"
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"syscall"
	"testing"
)

// embedded is a Dial hook's wrapper that embeds net.Conn and offers
// nothing else.
type embedded struct{ net.Conn }

// shows is a wrapper with a NetConn method.
type shows struct{ net.Conn }

func (c shows) NetConn() net.Conn { return c.Conn }

// fileConn is a connection that is a syscall.Conn of a file that is not
// a socket: a pipe.
type fileConn struct {
	net.Conn
	f *os.File
}

func (c fileConn) SyscallConn() (syscall.RawConn, error) { return c.f.SyscallConn() }

// TestSocketOf: the socket is found on the connection itself and through
// up to maxWrappers NetConn methods; not under a wrapper without one, nor
// through a *tls.Conn, nor past the bound, nor under a nil NetConn.
// peeker.init then looks at it once, and refuses a file that is not a
// socket.
func TestSocketOf(t *testing.T) {
	tcp, peer := loopbackPair(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()

	wrap := func(c net.Conn, n int) net.Conn {
		for range n {
			c = shows{c}
		}
		return c
	}
	cases := []struct {
		name  string
		c     net.Conn
		found bool
	}{
		{"the TCP connection", tcp, true},
		{"a wrapper without NetConn", embedded{tcp}, false},
		{"one NetConn", shows{tcp}, true},
		{"NetConn to a wrapper without one", shows{embedded{tcp}}, false},
		{"maxWrappers NetConns", wrap(tcp, maxWrappers), true},
		{"maxWrappers+1 NetConns", wrap(tcp, maxWrappers+1), false},
		{"a nil NetConn", shows{nil}, false},
		{"a *tls.Conn", tls.Client(tcp, &tls.Config{InsecureSkipVerify: true}), false},
		{"NetConn to a *tls.Conn", shows{tls.Client(tcp, &tls.Config{InsecureSkipVerify: true})}, false},
	}
	for _, c := range cases {
		if found := socketOf(c.c) != nil; found != c.found {
			t.Errorf("%s: socket found %v, want %v", c.name, found, c.found)
		}
		var pk peeker
		if err := pk.init(c.c); (err == nil) != c.found {
			t.Errorf("%s: init: %v, want a socket found: %v", c.name, err, c.found)
		}
	}

	var pk peeker
	if err := pk.init(shows{fileConn{tcp, r}}); !errors.Is(err, syscall.ENOTSOCK) || pk.raw != nil {
		t.Errorf("init on a pipe: %v (raw %v), want ENOTSOCK and no socket", err, pk.raw)
	}
	if pk.pending() {
		t.Error("pending on a peeker without a socket says true")
	}

	// The look works through the wrapper: nothing, then a byte.
	if err := pk.init(shows{tcp}); err != nil {
		t.Fatal(err)
	}
	if pk.pending() {
		t.Error("pending on an idle connection")
	}
	peer.Write([]byte("x"))
	rc, err := tcp.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	rc.Read(func(fd uintptr) bool { // waits until the byte is in the socket, and leaves it there
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return !errors.Is(err, syscall.EAGAIN)
	})
	if !pk.pending() {
		t.Error("pending misses a byte in the socket under the wrapper")
	}
}

// TestTLSRawFollow: whatever the reads' sizes, tlsRaw knows whether the
// bytes so far end inside a record (header or body) or between records.
func TestTLSRawFollow(t *testing.T) {
	var stream []byte
	var ends []int // offsets at which a record ends
	for _, n := range []int{0, 1, 4, 5, 300, 16384 + 256, 7} {
		stream = append(stream, 23, 3, 3, byte(n>>8), byte(n))
		stream = append(stream, make([]byte, n)...)
		ends = append(ends, len(stream))
	}
	atEnd := map[int]bool{0: true}
	for _, e := range ends {
		atEnd[e] = true
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		var r tlsRaw
		for off := 0; off < len(stream); {
			k := min(1+rng.IntN(700), len(stream)-off)
			r.follow(stream[off : off+k])
			off += k
			if got := r.midRecord(); got == atEnd[off] {
				t.Fatalf("after %d bytes: midRecord %v, want %v", off, got, !atEnd[off])
			}
		}
	}
}

// loopbackPair returns both ends of a loopback TCP connection, closed when
// the test ends.
func loopbackPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return client, server
}
