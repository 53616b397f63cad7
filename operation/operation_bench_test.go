package operation_test

import (
	"strings"
	"testing"

	"github.com/fusiongo/transport/operation"
)

// Request bodies that the benchmark classifies, as retry and dedupe see
// them.
const (
	queryBody    = `{"query":"query Product($id: ID!) { product(id: $id) { name } }","variables":{"id":"1"}}`
	mutationBody = `{"query":"mutation { addReview(text: \"great\") { id } }"}`
)

// BenchmarkOf measures what retry and dedupe add to each request to
// classify it, for a typical query, one with large variables (skipped as
// raw JSON), a batch, a document with escapes (lines, quotes) and a body
// with a case variant of "query" (two documents to read).
func BenchmarkOf(b *testing.B) {
	bodies := []struct {
		name string
		body string
	}{
		{"query", queryBody},
		{"mutation", mutationBody},
		{"large variables", `{"query":"query Q($in: [In!]!) { products(in: $in) { id name } }","variables":{"in":[` + strings.Repeat(`{"id":"123","tags":["a","b"]},`, 2000) + `{"id":"0"}]}}`},
		{"batch of 10", "[" + strings.Repeat(queryBody+",", 9) + queryBody + "]"},
		{"escaped document", `{"query":"query Product($id: ID!) {\n  product(id: $id) {\n    name\n    price(currency: \"EUR\")\n  }\n}\n","operationName":"Product","variables":{"id":"1"}}`},
		{"case variant", `{"query":"query Q { a }","Query":"mutation M { pay(amount: 100) }"}`},
	}
	for _, bb := range bodies {
		b.Run(bb.name, func(b *testing.B) {
			body := []byte(bb.body)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				operation.Of(body)
			}
		})
	}
}
