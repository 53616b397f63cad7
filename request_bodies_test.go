package transport_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// TestRequestBodies: Do with bodies of every framing reaches the
// source schema whole, byte for byte, with the framing net/http would use,
// on every path and engine, and each connection serves the next request: a body
// that leaves with the head (small), one written after it (past h1's
// one-write bound of 64 KiB), one of unknown length (chunked), and none.
func TestRequestBodies(t *testing.T) {
	big := strings.Repeat(`{"query":"{ products { id name } }"}`, 4000) // 144,000 bytes
	cases := []struct {
		name        string
		body        func() io.Reader // nil: no body
		wantBody    string
		wantTE      string // Transfer-Encoding the server saw
		wantLengthH string // Content-Length header the server saw
	}{
		{"small, known length", func() io.Reader { return strings.NewReader(`{"query":"{ ok }"}`) }, `{"query":"{ ok }"}`, "", "18"},
		{"large, known length", func() io.Reader { return strings.NewReader(big) }, big, "", "144000"},
		{"unknown length", func() io.Reader {
			return io.MultiReader(strings.NewReader(big[:70000]), strings.NewReader(big[70000:]))
		}, big, "chunked", ""},
		{"none", nil, "", "", "0"},
	}
	forPaths(t, func(t *testing.T, path env.Path) {
		var mu sync.Mutex
		var seen []string // Transfer-Encoding and Content-Length per request, as the handler saw them
		srv := newWireServer(t, wiretest.Options{Handler: func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, strings.Join(r.TransferEncoding, ",")+"|"+r.Header.Get("Content-Length"))
			mu.Unlock()
			io.WriteString(w, `{"data":{"ok":true}}`)
		}})
		inv := newInvoker(t, withSchema(path, srv.URL(), nil))
		for i, c := range cases {
			var body io.Reader
			if c.body != nil {
				body = c.body()
				if c.wantTE == "chunked" {
					body = struct{ io.Reader }{body} // hides the length from http.NewRequest
				}
			}
			req, err := http.NewRequest(http.MethodPost, srv.URL(), body)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := inv.Do(context.Background(), "products", req)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if got := readAll(t, resp); got != `{"data":{"ok":true}}` {
				t.Errorf("%s: caller got %q", c.name, got)
			}
			r := srv.Last(t)
			if r.Body != c.wantBody {
				t.Errorf("%s: server got %d bytes, want %d", c.name, len(r.Body), len(c.wantBody))
			}
			mu.Lock()
			got := seen[i]
			mu.Unlock()
			if want := c.wantTE + "|" + c.wantLengthH; got != want {
				t.Errorf("%s: server saw Transfer-Encoding|Content-Length %q, want %q", c.name, got, want)
			}
		}
		if n := len(srv.Opened()); n != 1 {
			t.Errorf("%d connections for %d sequential requests, want 1", n, len(cases))
		}
	})
}
