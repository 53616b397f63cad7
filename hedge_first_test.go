package transport_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
)

// TestHedgeFirstTryEndsWithCaller: with hedging on and a delay no query
// reaches, on every path, a query whose caller cancels it, or whose
// deadline passes, while the source schema holds it ends with the
// caller's error, and the source schema sees the client go; the next
// queries, whose first tries may reuse the memory of those (sockets:h1),
// are answered.
func TestHedgeFirstTryEndsWithCaller(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			in, gone := make(chan struct{}, 1), make(chan struct{}, 1)
			srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
				if b, _ := io.ReadAll(r.Body); !bytes.Contains(b, []byte("held")) {
					io.WriteString(w, `{"data":{"ok":true}}`)
					return
				}
				in <- struct{}{}
				select {
				case <-r.Context().Done():
					gone <- struct{}{}
				case <-time.After(resilienceGuard):
					t.Error("the held query's client never went")
				}
			})
			inv := newInvoker(t, withSchema(path, srv.URL(), func(s *env.SourceSchema) {
				s.Hedge = env.HedgeSettings{Enabled: env.Enabled, Delay: env.HedgeDelay{After: time.Hour}}
			}))
			answered := func() {
				t.Helper()
				for range 10 {
					if st, err := call(inv, queryBody); err != nil || st != http.StatusOK {
						t.Fatalf("a query after one that ended: %d, %v", st, err)
					}
				}
			}
			answered()
			for _, tc := range []struct {
				name string
				ctx  func() (context.Context, func())
				want error
			}{
				{"cancelled", func() (context.Context, func()) {
					ctx, cancel := context.WithCancel(context.Background())
					return ctx, cancel
				}, context.Canceled},
				{"deadline", func() (context.Context, func()) {
					return context.WithTimeout(context.Background(), 50*time.Millisecond)
				}, context.DeadlineExceeded},
			} {
				ctx, cancel := tc.ctx()
				done := make(chan error, 1)
				go func() {
					resp, err := inv.Post(ctx, "products", []byte(`{"query":"query Held { held }"}`))
					if err == nil {
						resp.Body.Close()
					}
					done <- err
				}()
				awaitGap(t, in, tc.name+": the held query's arrival")
				if tc.want == context.Canceled {
					cancel()
				}
				if err := awaitGap(t, done, tc.name+": the query's end"); !errors.Is(err, tc.want) {
					t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
				}
				awaitGap(t, gone, tc.name+": the client's going")
				cancel()
				answered()
			}
		})
	}
}
