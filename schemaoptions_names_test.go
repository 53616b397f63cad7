package transport_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// markMiddleware sets X-Options: on to every request it passes, so that a
// test sees on the wire whether a schema's options applied.
func markMiddleware(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("X-Options", "on")
		return next.RoundTrip(r)
	})
}

// TestSchemaOptionsForUnknownSchema: WithSchemaOptions for a name the
// configuration lacks fails New, naming it; a Reload that removes a schema
// with options warns, naming it, and one that adds it back applies them
// again, on every path.
func TestSchemaOptionsForUnknownSchema(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			products := newSchemaServer(t, nil)
			reviews := newSchemaServer(t, nil)
			cfg := config(path, "products", products.URL(), "reviews", reviews.URL())
			opts := transport.WithSchemaOptions("reviews", transport.SchemaOptions{Middleware: []func(http.RoundTripper) http.RoundTripper{markMiddleware}})

			_, err := transport.New(cfg, transport.WithLookupEnv(noEnv), transport.WithLogger(quiet),
				transport.WithSchemaOptions("prodcts", transport.SchemaOptions{AttemptMiddleware: []func(http.RoundTripper) http.RoundTripper{markMiddleware}}))
			if !errors.Is(err, fault.ErrUnknownSchema) || !strings.Contains(err.Error(), `"prodcts"`) {
				t.Fatalf("New with options for a misspelt schema: %v, want an error naming \"prodcts\" wrapping ErrUnknownSchema", err)
			}

			var logs wiretest.LogBuffer
			inv := newInvoker(t, cfg, opts, transport.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			post(t, inv, context.Background(), "reviews")
			if got := reviews.Last(t).Header.Get("X-Options"); got != "on" {
				t.Fatalf("reviews received X-Options %q, want on", got)
			}

			if err := inv.Reload(config(path, "products", products.URL())); err != nil {
				t.Fatal(err)
			}
			if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, `\"reviews\"`) {
				t.Errorf("a reload that removed reviews, which has options, logged no warning naming it:\n%s", l)
			}
			if err := inv.Reload(cfg); err != nil {
				t.Fatal(err)
			}
			post(t, inv, context.Background(), "reviews")
			if got := reviews.Last(t).Header.Get("X-Options"); got != "on" {
				t.Errorf("after the reload that added reviews back, it received X-Options %q, want on", got)
			}
		})
	}
}
