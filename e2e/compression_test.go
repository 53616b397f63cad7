package e2e

import (
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	accounts "github.com/wundergraph/graphql-go-tools/execution/federationtesting/accounts/graph"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
)

// gzipHandler answers as h does, gzip-encoded when the request's
// Accept-Encoding names gzip, and sends every request's Accept-Encoding
// values to seen.
func gzipHandler(h http.Handler, seen chan<- []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		values := r.Header.Values("Accept-Encoding")
		seen <- values
		if !slices.Contains(values, "gzip") {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(rec.Code)
		zw := gzip.NewWriter(w)
		zw.Write(rec.Body.Bytes())
		zw.Close()
	})
}

// TestEngineDecompresses shows who decompresses subgraph answers when
// graphql-go-tools' engine sends through Transport.Client: the engine asks for
// gzip and deflate itself (Accept-Encoding on each subgraph request), so
// neither path adds its own Accept-Encoding, even with decompression
// configured, and the gzip answer reaches the engine as the subgraph sent
// it: the engine decodes it, once.
func TestEngineDecompresses(t *testing.T) {
	for _, path := range []env.Path{env.PathLegacy, env.PathSockets} {
		t.Run(string(path), func(t *testing.T) {
			seen := make(chan []string, 16)
			sg := startSubgraphs(t, gzipHandler(accounts.GraphQLEndpointHandler(accounts.TestOptions), seen))
			cfg := sg.transportConfig()
			cfg.Path = path
			if path == env.PathSockets {
				cfg.Defaults.Decompression = []string{"gzip", "zstd"} // legacy always has Go's transparent gzip
			}
			inv, err := transport.New(cfg)
			if err != nil {
				t.Fatalf("transport.New: %v", err)
			}
			t.Cleanup(func() { inv.Close() })
			gw := startGateway(t, sg.routerConfig(), inv.Client(), transport.GatewayRequestHandler)

			status, got := post(t, gw.URL, []byte(`{"query":"{ me { id username } }"}`), nil)
			if want := `{"data":{"me":{"id":"1234","username":"Me"}}}`; status != http.StatusOK || string(got) != want {
				t.Errorf("status %d, answer %s; want 200 and %s", status, got, want)
			}
			if n := len(seen); n != 1 {
				t.Fatalf("the accounts subgraph got %d requests, want 1", n)
			}
			if ae := <-seen; !slices.Equal(ae, []string{"gzip", "deflate"}) {
				t.Errorf("the accounts subgraph got Accept-Encoding %q, want the engine's [gzip deflate]", ae)
			}
		})
	}
}
