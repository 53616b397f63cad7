package backend_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/backend"
)

// afterUpgrade is what an upgrading server saw on its connection after its
// answer: the bytes the client wrote on it, and whether the client closed
// it; err is set when neither came within the server's bound.
type afterUpgrade struct {
	got    string
	closed bool
	err    error
}

// upgradeBound bounds how long the upgrading server waits for the client
// to write or close: a connection Upgraded should have closed and left
// open fails the test when it passes, rather than hang it.
const upgradeBound = 10 * time.Second

// upgradeServer listens on loopback for one connection, reads one request
// on it and answers with head (a response head, blank line included).
// Then it reads what the client sends: on "ping" it writes "pong" and
// reads on until the client closes. What it saw comes on the channel.
func upgradeServer(t *testing.T, head string) (addr string, saw <-chan afterUpgrade) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	out := make(chan afterUpgrade, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			out <- afterUpgrade{err: err}
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			out <- afterUpgrade{err: err}
			return
		}
		io.Copy(io.Discard, req.Body)
		if _, err := io.WriteString(c, head); err != nil {
			out <- afterUpgrade{err: err}
			return
		}
		c.SetReadDeadline(time.Now().Add(upgradeBound))
		var a afterUpgrade
		buf := make([]byte, 4)
		if _, err := io.ReadFull(br, buf); err == nil {
			a.got = string(buf)
			io.WriteString(c, "pong")
			_, err = br.ReadByte()
			a.closed = err == io.EOF
			if !a.closed {
				a.err = err
			}
		} else if err == io.EOF {
			a.closed = true
		} else {
			a.err = err
		}
		out <- a
	}()
	return ln.Addr().String(), out
}

// TestUpgraded: Upgraded on a 101 (or a body net/http made writable) that
// came over the wire through net/http's Transport, as the nethttp engine
// gets it. An upgrade that answers the request's own ask, to the protocol
// asked (named in any case), hands the caller the connection: bytes go
// both ways on it, and it stays open until the caller closes it. Any
// other upgrade fails with fault.ErrUnaskedUpgrade, and the connection is
// closed at once: the server sees it end without a byte more.
func TestUpgraded(t *testing.T) {
	const upgradeTo = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: %s\r\nConnection: Upgrade\r\n\r\n"
	for _, tc := range []struct {
		name    string
		header  http.Header // the request's
		head    string      // the server's answer
		refused string      // the error's text when refused; "" when the upgrade is the caller's
		// closeChecked: the server can tell whether the client closed
		// (net/http returns a 101 without Upgrade headers with no body
		// and keeps its connection)
		closeChecked bool
	}{
		{"asked", http.Header{"Upgrade": {"websocket"}, "Connection": {"Upgrade"}}, strings.Replace(upgradeTo, "%s", "websocket", 1), "", true},
		{"asked, protocol with spaces around it", http.Header{"Upgrade": {" websocket "}, "Connection": {"Upgrade"}}, strings.Replace(upgradeTo, "%s", "websocket", 1), "", true},
		{"asked, protocol in another case", http.Header{"Upgrade": {"websocket"}, "Connection": {"keep-alive, upgrade"}}, strings.Replace(upgradeTo, "%s", "WebSocket", 1), "", true},
		{"unasked", nil, strings.Replace(upgradeTo, "%s", "websocket", 1), "asked for no upgrade", true},
		{"Upgrade without the Connection token", http.Header{"Upgrade": {"websocket"}}, strings.Replace(upgradeTo, "%s", "websocket", 1), "asked for no upgrade", true},
		{"another protocol", http.Header{"Upgrade": {"websocket"}, "Connection": {"Upgrade"}}, strings.Replace(upgradeTo, "%s", "h2c", 1), `upgraded to protocol "h2c" when "websocket" was asked`, true},
		{"101 without a writable body", http.Header{"Upgrade": {"websocket"}, "Connection": {"Upgrade"}}, "HTTP/1.1 101 Switching Protocols\r\n\r\n", "cannot be written", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, saw := upgradeServer(t, tc.head)
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/graphql", nil)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.header {
				req.Header[k] = v
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			if !backend.TurnsOver(resp) {
				resp.Body.Close()
				t.Fatalf("TurnsOver(%s) = false", resp.Status)
			}
			rwc, err := backend.Upgraded(req, resp)
			if tc.refused != "" {
				if !errors.Is(err, fault.ErrUnaskedUpgrade) || !strings.Contains(err.Error(), tc.refused) || rwc != nil {
					t.Fatalf("Upgraded = %v, %v; want nil, fault.ErrUnaskedUpgrade saying %q", rwc, err, tc.refused)
				}
				if !tc.closeChecked {
					return
				}
				if a := <-saw; a.err != nil || !a.closed || a.got != "" {
					t.Errorf("after the refused upgrade the server saw %q, closed %t, error %v; want the connection closed at once", a.got, a.closed, a.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Upgraded: %v; want the connection", err)
			}
			if _, err := io.WriteString(rwc, "ping"); err != nil {
				t.Fatal(err)
			}
			pong := make([]byte, 4)
			if _, err := io.ReadFull(rwc, pong); err != nil || string(pong) != "pong" {
				t.Fatalf("read %q, %v from the upgraded connection; want pong", pong, err)
			}
			rwc.Close()
			if a := <-saw; a.err != nil || a.got != "ping" || !a.closed {
				t.Errorf("the server saw %q, closed %t, error %v; want ping, then the caller's close", a.got, a.closed, a.err)
			}
		})
	}
}

// TestUpgradedWritableNot101: a response whose body is writable (the
// connection) but whose status is not 101 hands the connection over
// (TurnsOver), and Upgraded refuses it even when the request asked for
// that very protocol: fault.ErrUnaskedUpgrade, and the connection is
// closed, so the server end sees it end.
func TestUpgradedWritableNot101(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	req, err := http.NewRequest(http.MethodGet, "http://schema.test/graphql", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Connection", "Upgrade")
	resp := &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Header: http.Header{"Upgrade": {"websocket"}}, Body: client, Request: req}
	if !backend.TurnsOver(resp) {
		t.Fatal("TurnsOver = false for a writable body")
	}
	ended := make(chan error, 1)
	go func() {
		_, err := server.Read(make([]byte, 1))
		ended <- err
	}()
	rwc, err := backend.Upgraded(req, resp)
	if !errors.Is(err, fault.ErrUnaskedUpgrade) || rwc != nil {
		if rwc != nil {
			rwc.Close()
		}
		t.Fatalf("Upgraded = %v, %v; want nil, fault.ErrUnaskedUpgrade", rwc, err)
	}
	select {
	case err := <-ended:
		if err != io.EOF {
			t.Errorf("the server end read %v, want io.EOF: the connection closed", err)
		}
	case <-time.After(upgradeBound):
		t.Fatal("the refused connection was not closed")
	}
}
