package sockets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/testsupport/queuemodel"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// TestMaxPendingRequests: 2,000 callers behind max_conns_per_host 2 and
// max_pending_requests 100, against a server that holds every request
// until released: 2 are in flight, exactly 100 wait, and the other 1,898
// fail at once, unsent, with an error that names the bound and matches
// fault.ErrOverloaded. Once released, every caller has its own answer or
// that error, the server saw exactly the accepted ones, once each, and
// those that waited were served in the order they joined the queue. On
// both engines. (Moved from the root package, issue 31; the root keeps
// what the request path does with a refusal: no retry, legacy under a
// canary, the breaker left closed, the schema's name in the error.)
func TestMaxPendingRequests(t *testing.T) {
	const (
		callers = 2000
		conns   = 2
		pending = 100
	)
	forEngines(t, func(t *testing.T, engine string) {
		release := make(chan struct{})
		arrived := make(chan struct{}, callers)
		var mu sync.Mutex
		seen := map[string]int{} // X-Call -> times the server saw it
		srv := wiretest.NewServer(t, wiretest.Options{Handler: func(w http.ResponseWriter, r *http.Request) {
			call := r.Header.Get("X-Call")
			mu.Lock()
			seen[call]++
			mu.Unlock()
			arrived <- struct{}{}
			<-release
			fmt.Fprintf(w, `{"data":{"call":%q}}`, call)
		}})
		full := make(chan struct{})
		var rec queuemodel.Model
		rec.OnEvent(func(c queuemodel.Counts, ev backend.QueueEvent) {
			if ev == backend.QueueRefused && c.Refused == callers-conns-pending {
				close(full)
			}
		})
		tr := openSchemaWith(t, engineSchema(engine, srv.SchemaURL(), func(s *env.SourceSchema) {
			s.MaxConnsPerHost = conns
			s.MaxPendingRequests = pending
		}), func(s *backend.Schema) { s.OnQueue = queueHook(&rec) })
		ranOn(t, engine, tr)

		type result struct {
			body string
			err  error
		}
		results := make([]result, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				ctx := context.WithValue(context.Background(), callKey{}, i)
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.SchemaURL(), strings.NewReader(`{"query":"{ call }"}`))
				req.Header.Set("X-Call", fmt.Sprint(i))
				resp, err := tr.RoundTrip(req)
				if err == nil {
					var b []byte
					b, err = io.ReadAll(resp.Body)
					resp.Body.Close()
					results[i].body = string(b)
				}
				results[i].err = err
			})
		}
		for range conns {
			select {
			case <-arrived:
			case <-time.After(testTimeout):
				t.Fatal("the first requests did not reach the server")
			}
		}
		select {
		case <-full:
		case <-time.After(testTimeout):
			c := rec.Counts()
			t.Errorf("refused %d, waiting %d, want %d refused", c.Refused, c.Waiting, callers-conns-pending)
		}
		c := rec.Counts()
		waiting, refused := c.Waiting, c.Refused
		if waiting != pending {
			t.Errorf("%d requests wait with the queue full, want %d", waiting, pending)
		}
		// Each refused caller has its error already: none waits.
		close(release)
		wg.Wait()

		answered, overloaded := 0, 0
		for i, r := range results {
			switch {
			case r.err == nil:
				answered++
				if want := fmt.Sprintf(`{"data":{"call":"%d"}}`, i); r.body != want {
					t.Errorf("call %d got %s, want %s", i, r.body, want)
				}
			case errors.Is(r.err, fault.ErrOverloaded):
				overloaded++
				if !strings.Contains(r.err.Error(), "max_pending_requests 100") {
					t.Errorf("call %d: error %q does not name the bound", i, r.err)
				}
				mu.Lock()
				if seen[fmt.Sprint(i)] != 0 {
					t.Errorf("call %d was refused, yet the server saw it", i)
				}
				mu.Unlock()
			default:
				t.Errorf("call %d: %v", i, r.err)
			}
		}
		if answered != conns+pending || overloaded != callers-conns-pending || refused != overloaded {
			t.Errorf("%d answered, %d overloaded (%d refusals seen by the pool), want %d and %d", answered, overloaded, refused, conns+pending, callers-conns-pending)
		}
		mu.Lock()
		for call, n := range seen {
			if n != 1 {
				t.Errorf("the server saw call %s %d times", call, n)
			}
		}
		if len(seen) != answered {
			t.Errorf("the server saw %d calls, %d were answered", len(seen), answered)
		}
		mu.Unlock()
		c = rec.Counts()
		if c.Joined != pending || c.Overtaken != 0 || c.Waiting != 0 {
			t.Errorf("%d joined the queue (want %d), %d served out of order (first: %s), %d left in it", c.Joined, pending, c.Overtaken, c.FirstBad, c.Waiting)
		}
		t.Logf("%s: %d answered, %d refused with ErrOverloaded, %d waited, served in queue order", engine, answered, overloaded, c.Joined)
	})
}
