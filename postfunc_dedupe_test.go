package transport_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
)

// TestPostFuncDedupeShared: with dedupe on, PostFunc's memory is pooled on
// h1 (route.lends), and a query two PostFunc calls share is answered once.
// The first caller's callback returns, and 40 other calls reuse the pooled
// memory, while the second caller's callback still holds the shared
// answer: it reads its own answer, header and body, all the same, and
// nothing of the calls that ran in between (a shared answer is never made
// of memory another call takes over). On every path; under -race, no race
// is reported.
func TestPostFuncDedupeShared(t *testing.T) {
	// Each call's body is its id, a query; the other calls' are as long
	// as the shared one's, so that their heads lie where its did.
	query := func(name string) string { return fmt.Sprintf(`{"query":"{ %s }"}`, name) }
	shared := query("shared")
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			release := make(chan struct{})
			var once sync.Once
			open := func() { once.Do(func() { close(release) }) }
			var sharedSent atomic.Int32
			arrived := make(chan struct{}, 1)
			srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
				b, err := io.ReadAll(r.Body)
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				id := string(b)
				if id == shared {
					sharedSent.Add(1)
					arrived <- struct{}{}
					select {
					case <-release:
					case <-r.Context().Done():
						return
					}
				}
				w.Header().Set("X-Echo", id)
				io.WriteString(w, echoBody(id))
			})
			t.Cleanup(open) // before the server closes: cleanups run last first
			joined := make(chan int, 4)
			cfg := withSchema(path, srv.URL(), func(s *env.SourceSchema) { s.Dedupe = env.Enabled })
			cfg.Defaults.MaxConnsPerHost = 1 // every call on the shared answer's connection, and its memory
			inv := newInvoker(t, cfg, transport.WithDedupeJoinedHook(func(n int) {
				select {
				case joined <- n:
				default: // the later calls, each alone: no one reads their joins
				}
			}))

			first := make(chan error, 1)
			go func() { first <- inv.PostFunc(context.Background(), "products", []byte(shared), ownEcho(shared)) }()
			awaitGap(t, arrived, "the shared query at the source schema")
			awaitGap(t, joined, "the first caller to join")

			holding := make(chan struct{})
			resume := make(chan struct{})
			second := make(chan error, 1)
			go func() {
				second <- inv.PostFunc(context.Background(), "products", []byte(shared), func(resp *http.Response) error {
					close(holding)
					<-resume
					return ownEcho(shared)(resp)
				})
			}()
			if n := awaitGap(t, joined, "the second caller to join"); n != 2 {
				t.Fatalf("the second caller joined with %d waiters, want 2", n)
			}
			open()
			if err := awaitGap(t, first, "the first caller's return"); err != nil {
				t.Fatalf("first caller: %v", err)
			}
			awaitGap(t, holding, "the second caller's callback")
			for i := range 40 {
				id := query(fmt.Sprintf("o%05d", i))
				if err := inv.PostFunc(context.Background(), "products", []byte(id), ownEcho(id)); err != nil {
					t.Fatalf("call %s: %v", id, err)
				}
			}
			close(resume)
			if err := awaitGap(t, second, "the second caller's return"); err != nil {
				t.Errorf("second caller: %v", err)
			}
			if n := sharedSent.Load(); n != 1 {
				t.Errorf("the shared query reached the source schema %d times, want 1", n)
			}
		})
	}
}
