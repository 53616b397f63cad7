package wiretest

import (
	"fmt"
	"net"
	"testing"
)

// ListenLoopbacks listens on n loopback addresses, 127.0.0.2 and up, all on
// one port, as n replicas behind one DNS name: it tries again with a new
// port when one is taken on a later address, and skips the test where the
// machine has no second loopback address. The listeners are the caller's
// to close.
func ListenLoopbacks(t testing.TB, n int) (ls []net.Listener, port string) {
	t.Helper()
	for try := 0; try < 20 && len(ls) < n; try++ {
		for _, l := range ls {
			l.Close()
		}
		ls = ls[:0]
		l, err := net.Listen("tcp", "127.0.0.2:0")
		if err != nil {
			t.Skipf("no second loopback address: %v", err)
		}
		ls = append(ls, l)
		_, port, _ = net.SplitHostPort(l.Addr().String())
		for i := 1; i < n; i++ {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.%d:%s", i+2, port))
			if err != nil {
				break // the port is taken there: another try
			}
			ls = append(ls, l)
		}
	}
	if len(ls) < n {
		t.Fatalf("could not listen on %d loopback addresses with one port", n)
	}
	return ls, port
}
