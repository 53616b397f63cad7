package rawhttp

import (
	"fmt"
	"strings"
)

// The exchange the per-call benchmarks (the root's BenchmarkCall, e2e's
// BenchmarkPeers) make on every call, defined once so that their figures
// compare: a 300-byte GraphQL request with two forwarded gateway headers,
// and a 1 KiB JSON answer, both padded to their size with JSON whitespace.
// Treat the slices as constants.
var (
	BenchQuery  = padJSON(`{"query":"query TopProducts($first: Int!) { topProducts(first: $first) { upc name price weight inStock shippingEstimate reviews { id body author { id username } } } }","operationName":"TopProducts","variables":{"first":5}}`, 300)
	BenchAnswer = func() []byte {
		var sb strings.Builder
		sb.WriteString(`{"data":{"topProducts":[`)
		for i := 1; sb.Len() < 900; i++ {
			if i > 1 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `{"upc":"%d","name":"Product %d","price":%d,"weight":%d,"inStock":true}`, i, i, 100*i+99, 10+i)
		}
		sb.WriteString(`]}}`)
		return padJSON(sb.String(), 1024)
	}()
)

// The request's header values.
const (
	BenchContentType   = "application/json; charset=utf-8"
	BenchAccept        = "application/graphql-response+json; charset=utf-8, application/json; charset=utf-8"
	BenchAuthorization = "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJiZW5jaCJ9.c2lnbmF0dXJlLW9mLWEtYmVuY2gtdG9rZW4"
	BenchRequestID     = "3f6c2a1e-9b7d-4e0a-8c55-1d2e3f4a5b6c"
)

// padJSON returns the JSON object s with spaces before its closing brace
// up to size bytes. It panics if s is longer (a fixture's mistake).
func padJSON(s string, size int) []byte {
	if len(s) > size {
		panic(fmt.Sprintf("padJSON: %d bytes is more than %d", len(s), size))
	}
	return []byte(s[:len(s)-1] + strings.Repeat(" ", size-len(s)) + "}")
}
