package transport_test

import (
	"strings"
	"testing"

	"github.com/fusiongo/transport/env"
)

// TestForwardedBytesExactBound: headers.max_forwarded_bytes counts each
// forwarded header line whole (name, ": ", value, CRLF): at exactly that
// many bytes the header reaches the source schema; at one byte less the
// call fails naming the schema and the key, and nothing is sent.
func TestForwardedBytesExactBound(t *testing.T) {
	const name, value = "X-Tenant", "acme"
	exact := len(name) + len(": ") + len(value) + len("\r\n")
	for _, path := range paths {
		for _, tc := range []struct {
			name    string
			bound   int
			forward bool
		}{
			{"exactly the line", exact, true},
			{"a byte less", exact - 1, false},
		} {
			t.Run(string(path)+"/"+tc.name, func(t *testing.T) {
				srv := newSchemaServer(t, nil)
				cfg := withSchema(path, srv.url, func(s *env.SourceSchema) {
					s.Headers.Forward = []string{name}
					s.Headers.MaxForwardedBytes = tc.bound
				})
				inv := newInvoker(t, cfg)
				resp, err := inv.Post(gatewayCtx(name, value), "products", []byte(`{"query":"{ ok }"}`))
				if !tc.forward {
					if err == nil {
						resp.Body.Close()
						t.Fatalf("max_forwarded_bytes %d: Post of a %d-byte header line succeeded", tc.bound, exact)
					}
					if !strings.Contains(err.Error(), `source schema "products"`) || !strings.Contains(err.Error(), "headers.max_forwarded_bytes") {
						t.Errorf("error %q: want the schema and the key named", err)
					}
					if n := len(srv.Requests()); n != 0 {
						t.Errorf("the source schema received %d requests, want none", n)
					}
					return
				}
				if err != nil {
					t.Fatalf("max_forwarded_bytes %d: %v", tc.bound, err)
				}
				readAll(t, resp)
				if got := srv.Last(t).Header.Get(name); got != value {
					t.Errorf("%s = %q on the wire, want %q", name, got, value)
				}
			})
		}
	}
}
