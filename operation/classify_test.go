package operation_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/fusiongo/transport/operation"
)

// TestClassify: the kind of a whole request, from its method, query
// string and body, for the shapes of GraphQL over HTTP and the ones that
// servers read differently.
func TestClassify(t *testing.T) {
	const (
		query    = `{"query":"{ a }"}`
		mutation = `{"query":"mutation M { pay }"}`
	)
	q := func(vs ...string) string { // name, value, ... as a query string
		v := url.Values{}
		for i := 0; i+1 < len(vs); i += 2 {
			v.Add(vs[i], vs[i+1])
		}
		return v.Encode()
	}
	tests := []struct {
		name     string
		method   string
		rawQuery string
		body     string
		want     operation.Kind
	}{
		{"GET query", "GET", q("query", "{ a }"), "", operation.Query},
		{"GET named query with variables", "GET", q("query", "query Q($n: Int) { a(n: $n) }", "operationName", "Q", "variables", `{"n":1}`), "", operation.Query},
		{"GET mutation", "GET", q("query", "mutation M { pay }"), "", operation.Mutation},
		{"GET subscription", "GET", q("query", "subscription S { s }"), "", operation.Subscription},
		{"GET operationName picks the mutation", "GET", q("query", "query A { a } mutation B { b }", "operationName", "B"), "", operation.Mutation},
		{"GET case variant holds a mutation", "GET", q("query", "{ a }", "Query", "mutation M { pay }"), "", operation.Unknown},
		{"GET document that does not parse", "GET", q("query", "{ a"), "", operation.Unknown},
		{"GET without a document", "GET", q("extensions", `{"persistedQuery":{"version":1}}`, "operationName", "Q"), "", operation.Query},
		{"GET without parameters", "GET", "", "", operation.Query},
		{"empty method is GET", "", q("query", "mutation M { pay }"), "", operation.Mutation},
		{"empty method without a document is GET", "", "", "", operation.Query},
		{"HEAD query", "HEAD", q("query", "{ a }"), "", operation.Query},
		{"HEAD without a document", "HEAD", "", "", operation.Query},
		{"GET query string that servers split differently", "GET", "x=1;query=mutation%7Bb%7D", "", operation.Unknown},
		{"GET malformed escape", "GET", "query=%7Ba%7D&x=%zz", "", operation.Unknown},

		{"POST query", "POST", "", query, operation.Query},
		{"POST mutation", "POST", "", mutation, operation.Mutation},
		{"POST batch of queries", "POST", "", "[" + query + "," + query + "]", operation.Query},
		{"POST batch with a mutation", "POST", "", "[" + query + "," + mutation + "]", operation.Unknown},
		{"POST without a body", "POST", "", "", operation.Unknown},
		{"POST without a body, query in the URL", "POST", q("query", "{ a }"), "", operation.Query},
		{"POST form body", "POST", "", "query=%7B+a+%7D", operation.Unknown},
		{"POST application/graphql body", "POST", "", "{ a }", operation.Unknown},
		{"POST persisted query", "POST", "", `{"extensions":{"persistedQuery":{"version":1}}}`, operation.Unknown},
		{"POST query, other URL parameters", "POST", q("tenant", "acme"), query, operation.Query},
		{"POST query, query in the URL too", "POST", q("query", "{ b }"), "  " + query + "\n", operation.Query},
		{"POST query, mutation in the URL", "POST", q("query", "mutation M { pay }"), query, operation.Unknown},
		{"POST query body, URL operationName picks a mutation", "POST", q("operationName", "B"), `{"query":"query A { a } mutation B { b }","operationName":"A"}`, operation.Unknown},
		{"POST query body, URL operationName picks the same", "POST", q("operationName", "A"), `{"query":"query A { a } mutation B { b }","operationName":"A"}`, operation.Query},
		{"POST empty object, query in the URL", "POST", q("query", "{ a }"), "{ }", operation.Query},
		{"POST batch, query in the URL", "POST", q("query", "{ a }"), "[" + query + "]", operation.Unknown},
		{"POST invalid JSON, query in the URL", "POST", q("query", "{ a }"), "{", operation.Unknown},
		{"GET with a mutation body", "GET", "", mutation, operation.Mutation},
		{"PUT without a document", "PUT", "", "", operation.Unknown},

		{"body at the bound", "POST", "", padTo(query, operation.MaxBodyBytes), operation.Query},
		{"body over the bound", "POST", "", padTo(query, operation.MaxBodyBytes+1), operation.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body []byte
			if tt.body != "" {
				body = []byte(tt.body)
			}
			if got := operation.Classify(tt.method, tt.rawQuery, body); got != tt.want {
				t.Errorf("Classify(%q, %q, %.60q) = %v, want %v", tt.method, tt.rawQuery, tt.body, got, tt.want)
			}
		})
	}
}

// padTo returns the request object obj with white space in front, n bytes
// in all.
func padTo(obj string, n int) string {
	return strings.Repeat(" ", n-len(obj)) + obj
}

// FuzzClassify checks that Classify never panics and agrees with Of and
// OfParams, and that no document added beside a request makes a query of
// what is not one.
func FuzzClassify(f *testing.F) {
	for _, seed := range []struct{ method, rawQuery, body string }{
		{"GET", "query=%7B+a+%7D", ""},
		{"GET", "query=mutation%7Bx%7D&operationName=", ""},
		{"HEAD", "extensions=%7B%7D", ""},
		{"POST", "", `{"query":"{a}"}`},
		{"POST", "query=%7Ba%7D", `{"query":"{a}","operationName":null}`},
		{"POST", "operationName=B", `{"query":"query A{a} mutation B{b}","operationName":"A"}`},
		{"POST", "", `[{"query":"{a}"}]`},
		{"POST", "x=1;y=2", `{"query":"{a}"}`},
		{"GET", "", ` {"query":"mutation{a}"} `},
		{"DELETE", "", ""},
	} {
		f.Add(seed.method, seed.rawQuery, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, method, rawQuery string, body []byte) {
		got := operation.Classify(method, rawQuery, body)
		_, parseErr := url.ParseQuery(rawQuery)
		kind, document := operation.OfParams(rawQuery)
		get := method == "" || method == "GET" || method == "HEAD"
		switch {
		case parseErr != nil:
			if got != operation.Unknown {
				t.Errorf("Classify(%q, %q, %q) = %v with a query string that servers split differently", method, rawQuery, body, got)
			}
		case len(body) == 0 && !document:
			if want := map[bool]operation.Kind{true: operation.Query, false: operation.Unknown}[get]; got != want {
				t.Errorf("Classify(%q, %q, no body) = %v, want %v", method, rawQuery, got, want)
			}
		case len(body) == 0:
			if got != kind {
				t.Errorf("Classify(%q, %q, no body) = %v, OfParams: %v", method, rawQuery, got, kind)
			}
		case !hasRequestParams(rawQuery):
			if of := operation.Of(body); got != of {
				t.Errorf("Classify(%q, %q, %q) = %v, Of: %v", method, rawQuery, body, got, of)
			}
		}
		if got != operation.Query {
			return
		}
		// A query: the body's reading and the URL's are queries too.
		if len(body) > 0 && operation.Of(body) != operation.Query {
			t.Errorf("Classify(%q, %q, %q) = query, Of(body) = %v", method, rawQuery, body, operation.Of(body))
		}
		if document && kind != operation.Query {
			t.Errorf("Classify(%q, %q, %q) = query, OfParams = %v", method, rawQuery, body, kind)
		}
		// A mutation in the URL, under any reading of "query", makes it
		// no query.
		for _, name := range []string{"query", "Query", "QUERY"} {
			withMutation := rawQuery + "&" + url.Values{name: {"mutation M { m }"}}.Encode()
			if k := operation.Classify(method, withMutation, body); k == operation.Query {
				t.Errorf("Classify(%q, %q, %q) = query", method, withMutation, body)
			}
		}
	})
}

// hasRequestParams reports whether rawQuery has a parameter that a server
// may read as "query" or "operationName".
func hasRequestParams(rawQuery string) bool {
	values, _ := url.ParseQuery(rawQuery)
	for name := range values {
		n := strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(name))
		if n == "query" || n == "operationname" {
			return true
		}
	}
	return false
}
