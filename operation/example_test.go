package operation_test

import (
	"fmt"

	"github.com/fusiongo/transport/operation"
)

func ExampleOf() {
	for _, body := range []string{
		`{"query":"{ product(id: 1) { name } }"}`,
		`{"query":"query A { a } mutation B { b }","operationName":"B"}`,
		`{"query":"subscription { reviewAdded { id } }"}`,
		`[{"query":"{ a }"},{"query":"query Q { b }"}]`,
		`{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"ab12"}}}`,
		// encoding/json reads "Query" as "query", the last one winning: a
		// Go server runs the mutation, a JavaScript server the query.
		`{"query":"query Q { a }","Query":"mutation M { pay(amount: 100) }"}`,
	} {
		fmt.Println(operation.Of([]byte(body)))
	}
	// Output:
	// query
	// mutation
	// subscription
	// query
	// unknown
	// unknown
}
