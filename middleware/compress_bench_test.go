package middleware_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/fusiongo/transport/middleware"
)

// entityRequest returns an entity request at least size bytes long, in the
// shape of the benchmark's wave-4 inventory fetch
// (inventory/deep-wave4-variable-batch in the built-in corpus): products
// with the price and weight that shippingEstimate requires, with numbers
// drawn from a fixed seed so that the body is not one repeated line.
func entityRequest(size int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	b.WriteString(`{"query":"query($representations: [_Any!]!) { _entities(representations: $representations) { ... on Product { inStock shippingEstimate } } }","variables":{"representations":[`)
	for i := 0; b.Len() < size-4; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"__typename":"Product","upc":"%d","price":%d,"weight":%d}`, rng.IntN(1_000_000), rng.IntN(100_000), rng.IntN(10_000))
	}
	b.WriteString("]}}")
	return []byte(b.String())
}

// BenchmarkCompression measures Compress per codec on entity requests of
// 1 KB, 16 KB and 256 KB sent as Post sends them (a body with UnreadBytes,
// so nothing is copied in): ns/op and B/op are the cost of one call,
// compression included, against "off", the same pipeline without
// Compress; ratio is compressed/raw.
func BenchmarkCompression(b *testing.B) {
	for _, size := range []int{1 << 10, 16 << 10, 256 << 10} {
		body := entityRequest(size)
		for _, codec := range []string{"off", middleware.CodecGzip, middleware.CodecZstd} {
			b.Run(fmt.Sprintf("%dKB/%s", size>>10, codec), func(b *testing.B) {
				var sent int64
				next := roundTripFunc(func(req *http.Request) (*http.Response, error) {
					sent = req.ContentLength
					return okResponse, nil
				})
				rt := middleware.Compress(middleware.CompressConfig{Codec: codec, MinBytes: 1024})(next)
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://products.test/graphql", nil)
				req.Header.Set("Content-Type", "application/json")
				ub := &benchBody{b: body}
				b.ReportAllocs()
				b.SetBytes(int64(len(body)))
				for b.Loop() {
					ub.r.Reset(body)
					req.Body = ub
					req.ContentLength = int64(len(body))
					if _, err := rt.RoundTrip(req); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(sent)/float64(len(body)), "ratio")
			})
		}
	}
}

// okResponse is the response the benchmark's transport returns; never read.
var okResponse = &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}

// benchBody is a request body with UnreadBytes, as Post's is.
type benchBody struct {
	r bytes.Reader
	b []byte
}

func (u *benchBody) UnreadBytes() []byte                { return u.b }
func (u *benchBody) Read(p []byte) (int, error)         { return u.r.Read(p) }
func (u *benchBody) WriteTo(w io.Writer) (int64, error) { return u.r.WriteTo(w) }
func (u *benchBody) Close() error                       { return nil }
