package transport_test

// Shadow mode on the wire: the sample rate, and a caller that never waits
// for the shadow side.

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
)

// TestShadowSampleRate: shadow mode sends a sample of queries through
// the sockets path at its rate. Both sides reach the same server; the
// sockets side is told apart by its missing Accept-Encoding (viaSockets).
// For n = 2000 at p = 0.1 the count is binomial, mean 200 and standard
// deviation 13.4; the bounds are more than 7 deviations away.
func TestShadowSampleRate(t *testing.T) {
	const n = 2000
	srv := newSchemaServer(t, nil)
	cfg := config(env.PathLegacy, "products", srv.URL())
	// Enough comparison slots that no sampled query is dropped as busy.
	cfg.Shadow = env.ShadowSettings{Rate: 0.1, MaxConcurrent: 64}
	inv := newInvoker(t, cfg)
	for range n {
		post(t, inv, context.Background(), "products")
	}
	inv.Close() // waits for the comparisons, so every shadow request has arrived
	legacy, sockets := 0, 0
	for _, r := range srv.Requests() {
		if r.Header.Get("Accept-Encoding") == "" {
			sockets++
		} else {
			legacy++
		}
	}
	if legacy != n {
		t.Errorf("the legacy path sent %d queries, want every one of %d", legacy, n)
	}
	if sockets < 100 || sockets > 320 {
		t.Errorf("the sockets path was sent %d of %d queries at shadow rate 0.1, want 100 to 320 (mean 200)", sockets, n)
	}
}

// TestShadowCallerNeverWaits: in shadow mode the caller's Post returns,
// and its body reads to the end, while the candidate's request (the
// sockets path's: no Accept-Encoding) is still held by the server.
func TestShadowCallerNeverWaits(t *testing.T) {
	arrived := make(chan struct{})
	var arrivedOnce sync.Once
	release := make(chan struct{})
	srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
		if viaSockets(r) {
			arrivedOnce.Do(func() { close(arrived) })
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		io.WriteString(w, `{"data":{"ok":true}}`)
	})
	var releaseOnce sync.Once
	releaseAll := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(releaseAll) // before the server closes
	cfg := config(env.PathLegacy, "products", srv.URL())
	// The candidate's own bound is far beyond the test.
	cfg.Shadow = env.ShadowSettings{Rate: 1, Timeout: time.Minute}
	inv := newInvoker(t, cfg)

	done := postAsync(inv, context.Background(), "products", `{"query":"{ ok }"}`)
	select {
	case <-arrived:
	case <-time.After(gapGuard):
		releaseAll()
		<-done
		t.Fatal("the candidate's request never reached the server")
	}
	var res postResult
	select {
	case res = <-done:
	case <-time.After(gapGuard):
		t.Error("the caller's Post did not return while the candidate was held: it waited for the candidate")
		releaseAll()
		res = <-done
	}
	releaseAll()
	if res.err != nil || res.body != `{"data":{"ok":true}}` {
		t.Errorf("caller got %q, %v; want the legacy answer read to its end", res.body, res.err)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("the server received %d requests, want the primary's and the candidate's", n)
	}
}
