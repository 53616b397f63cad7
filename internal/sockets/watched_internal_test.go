//go:build unix

package sockets

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// TestWatchedParkedWaits: where the socket is visible, a Read that waits
// (in waitReadable) is parked and returns what the peer then writes; the
// read deadline still ends a waiting Read with os.ErrDeadlineExceeded, a
// net.Error that is a Timeout, as net/http expects; a Read allocates
// nothing; a connection hidden under a wrapper is marked so, and gets no
// wait. TestStrayCrowd measures the guard itself.
func TestWatchedParkedWaits(t *testing.T) {
	tcp, peer := loopbackPair(t)

	if w := newWatchedConn(embedded{tcp}); !w.hidden || w.wait != nil {
		t.Errorf("under a wrapper without NetConn: hidden %v, wait set %v; want hidden, no wait", w.hidden, w.wait != nil)
	}
	w := newWatchedConn(tcp)
	if w.hidden || w.wait == nil {
		t.Fatalf("a *net.TCPConn: hidden %v, wait set %v; want a wait", w.hidden, w.wait != nil)
	}

	// onPark runs as the Read begins, after it marked itself parked: the
	// pool's own wake, used here to know when to write.
	parked := make(chan struct{})
	w.onPark = func() { close(parked) }
	w.want.Store(true)
	got := make(chan []byte, 1)
	go func() {
		buf := make([]byte, 16)
		n, _ := w.Read(buf)
		got <- buf[:n]
	}()
	<-parked
	if !w.parked.Load() {
		t.Fatal("the Read ran onPark but is not marked parked")
	}
	if _, err := peer.Write([]byte("stray")); err != nil {
		t.Fatal(err)
	}
	if b := <-got; string(b) != "stray" {
		t.Fatalf("Read returned %q, want %q", b, "stray")
	}

	w.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err := w.Read(make([]byte, 1))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a Read past its deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Errorf("a Read past its deadline: %#v, want a net.Error that is a Timeout", err)
	}
	w.SetReadDeadline(time.Time{})

	buf := make([]byte, 1)
	allocs := testing.AllocsPerRun(100, func() {
		peer.Write(buf)
		w.Read(buf)
	})
	if allocs != 0 {
		t.Errorf("a Read allocates %v times, want 0", allocs)
	}
}
