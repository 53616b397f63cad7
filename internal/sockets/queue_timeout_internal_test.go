package sockets

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
)

// TestHeaderTimeoutCountsTheQueue: at max_conns_per_host 1, a request that
// waited for the connection for most of header_timeout and then meets
// slow headers fails with a *fault.HeaderTimeoutError, its Queued above
// zero, about one header_timeout after it was sent, not one after it left
// the queue. The first request holds the connection until 300ms after the
// second was sent; the second's headers never come. With a 400ms bound the
// error must come before 400ms+300ms: a bound restarted after the queue
// ends no earlier than 700ms.
func TestHeaderTimeoutCountsTheQueue(t *testing.T) {
	const (
		headerTimeout = 400 * time.Millisecond
		held          = 300 * time.Millisecond // the first request's hold on the connection, from the second's send
		slack         = 300 * time.Millisecond
	)
	for _, engine := range []string{env.EngineH1, env.EngineNetHTTP} {
		t.Run(engine, func(t *testing.T) {
			firstIn := make(chan struct{})
			secondSent := make(chan time.Time, 1)
			stop := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				if r.Header.Get("X-N") == "first" {
					close(firstIn)
					// The server's slowness, the scenario's shape: the
					// connection frees held after the second request.
					select {
					case sent := <-secondSent:
						time.Sleep(time.Until(sent.Add(held)))
					case <-stop:
					}
					io.WriteString(w, "{}")
					return
				}
				// Headers that never come, until the client gives up.
				select {
				case <-r.Context().Done():
				case <-stop:
				}
			}))
			defer srv.Close()
			defer close(stop)
			var s env.Settings
			s.Engine = engine
			s.MaxConnsPerHost = 1
			s.HeaderTimeout = headerTimeout
			tr := openTransport(t, env.Config{SourceSchemas: map[string]env.SourceSchema{"products": {URL: srv.URL, Settings: s}}}, "products")
			if (tr.pool.h1 != nil) != (engine == env.EngineH1) {
				t.Fatalf("engine %s not in use", engine)
			}
			request := func(n string) *http.Request {
				req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("{}"))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("X-N", n)
				return req
			}
			first := make(chan error, 1)
			go func() {
				resp, err := tr.RoundTrip(request("first"))
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				first <- err
			}()
			select {
			case <-firstIn:
			case <-time.After(testTimeout):
				t.Fatal("the first request did not reach the server")
			}
			sent := time.Now()
			secondSent <- sent
			resp, err := tr.RoundTripWithin(request("second"), headerTimeout)
			took := time.Since(sent)
			if err == nil {
				resp.Body.Close()
			}
			var hte *fault.HeaderTimeoutError
			if !errors.As(err, &hte) {
				t.Fatalf("second request: %v, want a *fault.HeaderTimeoutError", err)
			}
			if hte.Queued <= 0 || hte.Bound != headerTimeout {
				t.Errorf("HeaderTimeoutError{Bound: %v, Queued: %v}, want Bound %v and Queued above 0", hte.Bound, hte.Queued, headerTimeout)
			}
			if took >= headerTimeout+slack {
				t.Errorf("header timeout after %v (queued %v), want before %v: the bound restarted when the request left the queue", took, hte.Queued, headerTimeout+slack)
			}
			if err := <-first; err != nil {
				t.Errorf("first request: %v", err)
			}
		})
	}
}
