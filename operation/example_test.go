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

func ExampleClassify() {
	for _, r := range []struct{ method, rawQuery, body string }{
		{"GET", "query=%7B+product%28id%3A+1%29+%7B+name+%7D+%7D", ""},
		{"GET", "query=mutation+%7B+pay%28amount%3A+100%29+%7D", ""},
		{"POST", "", `{"query":"{ product(id: 1) { name } }"}`},
		// The URL's document counts beside the body's: some servers read
		// it first.
		{"POST", "query=mutation+%7B+pay%28amount%3A+100%29+%7D", `{"query":"{ a }"}`},
		// A GET of a persisted query by its hash: GET runs only queries.
		{"GET", "extensions=%7B%22persistedQuery%22%3A%7B%7D%7D", ""},
	} {
		fmt.Println(operation.Classify(r.method, r.rawQuery, []byte(r.body)))
	}
	// Output:
	// query
	// mutation
	// query
	// unknown
	// query
}
