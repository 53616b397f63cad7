package transport_test

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	transport "github.com/fusiongo/transport"
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
// configuration lacks is logged at Warn by New, naming it, and applies
// once a Reload adds that schema; a Reload that removes a schema with
// options warns the same way, and one that adds it back applies them
// again, on every path.
func TestSchemaOptionsForUnknownSchema(t *testing.T) {
	mark := transport.SchemaOptions{Middleware: []func(http.RoundTripper) http.RoundTripper{markMiddleware}}
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			products := newSchemaServer(t, nil)
			reviews := newSchemaServer(t, nil)
			var logs wiretest.LogBuffer
			inv := newInvoker(t, config(path, "products", products.URL()),
				transport.WithSchemaOptions("zeta", mark), transport.WithSchemaOptions("reviews", mark),
				transport.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			// Every unknown name, in order, and the names the configuration has.
			want := `WithSchemaOptions for \"reviews\", \"zeta\": the configuration has no such source schema (it has products)`
			if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, want) {
				t.Errorf("New with options for reviews and zeta, which the configuration lacks, logged no warning naming them (%s):\n%s", want, l)
			}

			both := config(path, "products", products.URL(), "reviews", reviews.URL())
			if err := inv.Reload(both); err != nil {
				t.Fatal(err)
			}
			post(t, inv, context.Background(), "reviews")
			if got := reviews.Last(t).Header.Get("X-Options"); got != "on" {
				t.Fatalf("after the reload that added reviews, it received X-Options %q, want on", got)
			}
			post(t, inv, context.Background(), "products")
			if got := products.Last(t).Header.Get("X-Options"); got != "" {
				t.Errorf("products received X-Options %q: another schema's options", got)
			}

			before := len(logs.String())
			if err := inv.Reload(config(path, "products", products.URL())); err != nil {
				t.Fatal(err)
			}
			if l := logs.String()[before:]; !strings.Contains(l, "level=WARN") || !strings.Contains(l, `\"reviews\"`) {
				t.Errorf("a reload that removed reviews, which has options, logged no warning naming it:\n%s", l)
			}
			if err := inv.Reload(both); err != nil {
				t.Fatal(err)
			}
			post(t, inv, context.Background(), "reviews")
			if got := reviews.Last(t).Header.Get("X-Options"); got != "on" {
				t.Errorf("after the reload that added reviews back, it received X-Options %q, want on", got)
			}
		})
	}
}

// TestSchemaOptionsUnusedHooks: Dial or VerifyConnection beside a
// RoundTripper, which replaces the transport that would call them, fails
// New naming the schema and the field, on every path; the RoundTripper
// alone is accepted and answers.
func TestSchemaOptionsUnusedHooks(t *testing.T) {
	answered := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
	})
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) { return nil, errors.New("never") }
	verify := func(tls.ConnectionState) error { return errors.New("never") }
	for _, path := range paths {
		for _, tc := range []struct {
			name, want string
			so         transport.SchemaOptions
		}{
			{"Dial", "SchemaOptions.Dial", transport.SchemaOptions{RoundTripper: answered, Dial: dial}},
			{"VerifyConnection", "SchemaOptions.VerifyConnection", transport.SchemaOptions{RoundTripper: answered, VerifyConnection: verify}},
			{"RoundTripper alone", "", transport.SchemaOptions{RoundTripper: answered}},
		} {
			t.Run(string(path)+"/"+tc.name, func(t *testing.T) {
				cfg := config(path, "products", "http://127.0.0.1:1/graphql")
				inv, err := transport.New(cfg, transport.WithLookupEnv(noEnv), transport.WithLogger(quiet), transport.WithSchemaOptions("products", tc.so))
				if tc.want == "" {
					if err != nil {
						t.Fatal(err)
					}
					defer inv.Close()
					resp, err := inv.Post(context.Background(), "products", []byte(`{"query":"{a}"}`))
					if err != nil || resp.StatusCode != 200 {
						t.Fatalf("Post through the RoundTripper: %v", err)
					}
					resp.Body.Close()
					return
				}
				if err == nil {
					inv.Close()
					t.Fatalf("New accepted %s beside a RoundTripper", tc.want)
				}
				if !strings.Contains(err.Error(), `"products"`) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("New: %v; want an error naming \"products\" and %s", err, tc.want)
				}
			})
		}
	}
}
