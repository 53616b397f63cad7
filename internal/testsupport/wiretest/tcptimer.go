package wiretest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// SocketTimer reads the kernel timer of the loopback client socket that a
// server saw as remote (a Request's Remote), from /proc/net/tcp: "02" is
// the keep-alive timer, "00" none, with the time left. A retransmission
// timer ("01") may show briefly instead; SocketTimer reads again until
// another shows, up to a second. It skips the test on a system without
// /proc/net/tcp, and fails it if the socket is not there.
func SocketTimer(t testing.TB, remote string) (kind string, left time.Duration) {
	t.Helper()
	_, portText, _ := net.SplitHostPort(remote)
	port, _ := strconv.Atoi(portText)
	for range 50 {
		var found bool
		if kind, left, found = tcpTimer(t, port); !found {
			t.Fatalf("client socket 127.0.0.1:%d not in /proc/net/tcp", port)
		}
		if kind != "01" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return kind, left
}

// tcpTimer reads the timer of the client socket with local port port from
// /proc/net/tcp.
func tcpTimer(t testing.TB, port int) (kind string, left time.Duration, ok bool) {
	t.Helper()
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		t.Skip("keep-alive is observed through /proc/net/tcp, which this system lacks:", err)
	}
	defer f.Close()
	local := fmt.Sprintf("0100007F:%04X", port)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != local || fields[3] != "01" { // 01: ESTABLISHED
			continue
		}
		kind, ticks, _ := strings.Cut(fields[5], ":")
		n, _ := strconv.ParseInt(ticks, 16, 64)
		return kind, time.Duration(n) * time.Second / 100, true // USER_HZ is 100 on Linux
	}
	return "", 0, false
}
