package transport_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"reflect"
	"testing"

	"github.com/fusiongo/transport/env"
)

// TestTrailers: a chunked response's trailer reaches the caller through
// the request path as net/http gives it, on every path and engine: with a
// Trailer header, the declared names with nil values before EOF and the
// values after; without one, nothing before EOF and the values after.
// internal/sockets' TestEngineTrailers has the same for the engines under
// the request path, and that the connection is reused.
func TestTrailers(t *testing.T) {
	const chunks = "8\r\n{\"data\":\r\n3\r\n{}}\r\n0\r\nX-Sum: 42\r\nX-Count: 1\r\nX-Count: 2\r\n\r\n"
	after := http.Header{"X-Sum": {"42"}, "X-Count": {"1", "2"}}
	cases := []struct {
		name         string
		answer       string
		before       http.Header
		after        http.Header
		wantBodyText string
	}{
		{"declared", "HTTP/1.1 200 OK\r\nTrailer: X-Sum, X-Count\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks,
			http.Header{"X-Sum": nil, "X-Count": nil}, after, `{"data":{}}`},
		{"undeclared", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks, nil, after, `{"data":{}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forPaths(t, func(t *testing.T, path env.Path) {
				srv := newRawServer(t, func(conn net.Conn, br *bufio.Reader) {
					for {
						if _, err := readRequest(br); err != nil {
							return
						}
						if _, err := io.WriteString(conn, c.answer); err != nil {
							return
						}
					}
				})
				inv := newInvoker(t, withSchema(path, srv.url, nil))
				resp, err := inv.Post(context.Background(), "products", []byte(`{}`))
				if err != nil {
					t.Fatal(err)
				}
				before := resp.Trailer.Clone()
				body := readAll(t, resp)
				if !reflect.DeepEqual(before, c.before) || !reflect.DeepEqual(resp.Trailer, c.after) || body != c.wantBodyText {
					t.Errorf("caller saw trailer %v before EOF, %v after, body %q; want %v, %v, %q", before, resp.Trailer, body, c.before, c.after, c.wantBodyText)
				}
			})
		})
	}
}
