package transport_test

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
)

// TestResendPartialHead: a GET on a reused connection whose server reads
// it, sends part of a response head and closes the connection. The server
// has answered (a byte of a response came), so the request is not sent
// again on any path: the caller gets an error naming the schema, and the
// server sees the GET exactly once. (With no byte of an answer, the same
// GET goes again once on another connection: the server may have closed
// the idle connection just as it left; TestH1ConnResendAfterPartialAnswer
// has both cases for the h1 engine.)
func TestResendPartialHead(t *testing.T) {
	const ok = `{"data":{"ok":true}}`
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			var mu sync.Mutex
			var gets []string // the GETs the server read, by connection
			srv := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
				for {
					req, err := readRequest(br)
					if err != nil {
						return
					}
					mu.Lock()
					n := len(gets)
					if req.Method == http.MethodGet {
						gets = append(gets, c.RemoteAddr().String())
						n++
					}
					mu.Unlock()
					if n <= 1 {
						c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n" + ok))
						continue
					}
					c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Le"))
					c.(*net.TCPConn).CloseWrite()
					return
				}
			})
			inv := newInvoker(t, withSchema(path, srv.url, nil))
			get := func() (*http.Response, error) {
				req, err := http.NewRequest(http.MethodGet, srv.url, nil)
				if err != nil {
					t.Fatal(err)
				}
				return inv.Do(context.Background(), "products", req)
			}
			resp, err := get()
			if err != nil {
				t.Fatalf("first GET: %v", err)
			}
			if body := readAll(t, resp); body != ok {
				t.Fatalf("first GET got %q, want %q", body, ok)
			}
			resp, err = get()
			if err == nil {
				resp.Body.Close()
			}
			errorNamesSchema(t, err)
			mu.Lock()
			defer mu.Unlock()
			if len(gets) != 2 || gets[0] != gets[1] {
				t.Errorf("the server read GETs on %v; want two, the second on the first's connection, and no third", gets)
			}
		})
	}
}
