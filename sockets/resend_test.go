package sockets_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestResendAfterDeadConn: the server answers a connection's first request
// and keeps it alive, then reads the second request on it, whole, and
// closes the connection without a byte of answer, as a server that closed
// an idle connection just as the request arrived. The request (a POST with
// an Idempotency-Key, so it may go twice) is sent once more, on a new
// connection, with its full body: the server receives that body again and
// the caller gets the answer to it.
func TestResendAfterDeadConn(t *testing.T) {
	// seen is one request as the server got it: on which connection, as
	// its how-manieth request, with what body.
	type seen struct {
		conn, nth int
		body      string
	}
	type connKey struct{}
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			var conns atomic.Int64
			var mu sync.Mutex
			var got []seen           // guarded by mu
			perConn := map[int]int{} // requests per connection; guarded by mu
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				conn := r.Context().Value(connKey{}).(int)
				b, err := io.ReadAll(r.Body)
				if err != nil {
					t.Errorf("server read of the request body: %v", err)
					return
				}
				mu.Lock()
				perConn[conn]++
				nth := perConn[conn]
				got = append(got, seen{conn, nth, string(b)})
				mu.Unlock()
				if conn == 1 && nth == 2 {
					// The kept-alive connection dies under the request.
					c, _, err := http.NewResponseController(w).Hijack()
					if err != nil {
						t.Errorf("hijack: %v", err)
						return
					}
					c.Close()
					return
				}
				w.Write([]byte("answer to " + string(b)))
			}))
			srv.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
				return context.WithValue(ctx, connKey{}, int(conns.Add(1)))
			}
			srv.Start()
			t.Cleanup(srv.Close)
			rt := newTransport(t, engine, srv.URL, nil)

			post(t, rt, srv.URL, `{"query":"{ warm }"}`) // connection 1, kept alive
			body := `{"query":"{ products { id name } }"}`
			req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Idempotency-Key", "k-1")
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatalf("RoundTrip: %v; want the answer of the re-sent request", err)
			}
			defer resp.Body.Close()
			answer, err := io.ReadAll(resp.Body)
			if err != nil || string(answer) != "answer to "+body {
				t.Fatalf("answer %q (%v), want %q", answer, err, "answer to "+body)
			}
			mu.Lock()
			defer mu.Unlock()
			want := []seen{{1, 1, `{"query":"{ warm }"}`}, {1, 2, body}, {2, 1, body}}
			if len(got) != len(want) {
				t.Fatalf("server got %+v, want %+v", got, want)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("request %d at the server: %+v, want %+v", i, got[i], want[i])
				}
			}
		})
	}
}
