package sockets

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
)

// TestLifetimeNeverCutsABody: on each engine, a response whose body is
// still coming when its connection's conn_lifetime ends arrives whole, and
// the connection closes after it (moved here from the root package's
// pool_test.go, TestConnLifetimeNeverCutsARequest: TestPoolLifetime holds a
// request before its headers, this one in its body).
func TestLifetimeNeverCutsABody(t *testing.T) {
	const lifetime = 50 * time.Millisecond
	for _, engine := range []string{env.EngineH1, env.EngineNetHTTP} {
		t.Run(engine, func(t *testing.T) {
			rest := make(chan struct{})
			closed := make(chan struct{})
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				io.WriteString(w, `{"data":`)
				w.(http.Flusher).Flush()
				<-rest
				io.WriteString(w, `{"ok":true}}`)
			}))
			srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
				if st == http.StateClosed {
					close(closed) // one connection only
				}
			}
			srv.Start()
			defer srv.Close()
			var s env.Settings
			s.Engine = engine
			s.ConnLifetime = lifetime
			tr := openTransport(t, env.Config{SourceSchemas: map[string]env.SourceSchema{"products": {URL: srv.URL, Settings: s}}}, "products")
			resp, err := post(tr, srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			tr.pool.mu.Lock()
			expires := tr.pool.conns[0].expires
			tr.pool.mu.Unlock()
			// The lifetime itself is the clock under test, not a wait for
			// another goroutine.
			<-time.After(time.Until(expires))
			select {
			case <-closed:
				t.Fatal("the connection closed at its expiry with a body still coming")
			default:
			}
			close(rest)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || string(body) != `{"data":{"ok":true}}` {
				t.Fatalf("body %q, %v", body, err)
			}
			select {
			case <-closed:
			case <-time.After(testTimeout):
				t.Fatalf("the expired connection did not close within %v of its response's end", testTimeout)
			}
		})
	}
}
