package transport

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// TestUpgradeSetClose: closeAll closes the connections handed over, and
// one handed over after it (a 101 that came in as the invoker closed) is
// closed at once; the source schema's side of each sees the end. Closing
// a connection after closeAll is harmless.
func TestUpgradeSetClose(t *testing.T) {
	var s upgradeSet
	before, beforePeer := net.Pipe()
	u := s.add(before)
	s.closeAll()
	after, afterPeer := net.Pipe()
	late := s.add(after)
	for name, peer := range map[string]net.Conn{"handed over before Close": beforePeer, "handed over after Close": afterPeer} {
		peer.SetReadDeadline(time.Now().Add(10 * time.Second)) // fails a broken rule, never hangs
		if _, err := peer.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Errorf("%s: the peer read %v, want EOF (the connection closed)", name, err)
		}
		peer.Close()
	}
	u.Close()
	late.Close()
	if len(s.conns) != 0 {
		t.Errorf("%d connections still counted after Close", len(s.conns))
	}
}
