package corpus

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/fusiongo/transport/middleware"
)

// TestCompressionOfEntityRequests measures what request_compression saves
// on the corpus's entity requests (every body with _entities, the
// benchmark's deep-recursion waves among them): each is sent through
// middleware.Compress at min_bytes 1 and at the default 1024, per codec,
// and the bytes that would cross the wire are summed. It logs the table
// (go test -v -run TestCompressionOfEntityRequests) and checks only that
// the default min_bytes leaves a body under 1 KB alone.
func TestCompressionOfEntityRequests(t *testing.T) {
	type total struct{ raw, sent int }
	sums := map[string]*total{}
	for _, e := range parse(t) {
		if !bytes.Contains(e.Body, []byte("_entities")) {
			continue
		}
		for _, codec := range []string{middleware.CodecGzip, middleware.CodecZstd} {
			for _, minBytes := range []int{1, middleware.DefaultCompressMinBytes} {
				var sent int
				rt := middleware.Compress(middleware.CompressConfig{Codec: codec, MinBytes: minBytes})(roundTrip(func(req *http.Request) (*http.Response, error) {
					b, err := io.ReadAll(req.Body)
					sent = len(b)
					return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, err
				}))
				req, _ := http.NewRequest(http.MethodPost, "http://"+e.Schema+".test/graphql", bytes.NewReader(e.Body))
				if _, err := rt.RoundTrip(req); err != nil {
					t.Fatal(err)
				}
				if minBytes > 1 && len(e.Body) < minBytes && sent != len(e.Body) {
					t.Errorf("%s: %d bytes under min_bytes %d sent as %d", e.Name, len(e.Body), minBytes, sent)
				}
				key := codec + " min_bytes " + map[bool]string{true: "1", false: "1024"}[minBytes == 1]
				if sums[key] == nil {
					sums[key] = &total{}
				}
				sums[key].raw += len(e.Body)
				sums[key].sent += sent
				if minBytes == 1 && strings.Contains(e.Name, "deep-wave") {
					t.Logf("%-45s %5d bytes, %s %5d (%.0f%%)", e.Name, len(e.Body), codec, sent, 100*float64(sent)/float64(len(e.Body)))
				}
			}
		}
	}
	for _, key := range []string{"gzip min_bytes 1", "zstd min_bytes 1", "gzip min_bytes 1024", "zstd min_bytes 1024"} {
		s := sums[key]
		t.Logf("all entity requests, %s: %d bytes sent as %d, %.0f%% saved", key, s.raw, s.sent, 100*(1-float64(s.sent)/float64(s.raw)))
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
