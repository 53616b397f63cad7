package middleware_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/fusiongo/transport/middleware"
)

// request renders a GraphQL-over-HTTP request object; a nil name leaves
// operationName out.
func request(t testing.TB, query string, name *string) string {
	t.Helper()
	m := map[string]any{"query": query}
	if name != nil {
		m["operationName"] = *name
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func ptr(s string) *string { return &s }

func TestOperationKindDocuments(t *testing.T) {
	tests := []struct {
		name  string
		query string
		op    *string // operationName; nil: absent
		want  middleware.Kind
	}{
		{"shorthand", "{ product { id } }", nil, middleware.Query},
		{"query keyword", "query { product { id } }", nil, middleware.Query},
		{"named query", "query Products { products { id } }", nil, middleware.Query},
		{"no space after keyword", "query{a}", nil, middleware.Query},
		{"mutation", "mutation { addReview { id } }", nil, middleware.Mutation},
		{"subscription", "subscription OnReview { reviewAdded { id } }", nil, middleware.Subscription},
		{"leading comment and commas", "# mutation { x }\n,, query Q { a }", nil, middleware.Query},
		{"byte order mark", "\uFEFFmutation { a }", nil, middleware.Mutation},
		{"CR ends comment", "# c\rmutation { a }", nil, middleware.Mutation},
		{"variables with object default", `query Q($in: In = {a: "}", b: [1, 2]}) { a(in: $in) }`, nil, middleware.Query},
		{"directives", `query Q @cached(ttl: 5) @live { a }`, nil, middleware.Query},
		{"fragment before operation", "fragment F on Product { id } mutation M { a { ...F } }", nil, middleware.Mutation},
		{"fragment with directive", "query { ...F } fragment F on Q @dir(x: 1) { a }", nil, middleware.Query},
		{"brace in string", `{ a(s: "}") } `, nil, middleware.Query},
		{"escaped quote in string", `{ a(s: "\"}") }`, nil, middleware.Query},
		{"brace in block string", `{ a(s: """ } mutation { x } """) }`, nil, middleware.Query},
		{"escaped triple quote in block string", `{ a(s: """ \""" } """) }`, nil, middleware.Query},
		{"brace in comment inside selection", "{ a # }\n b }", nil, middleware.Query},

		{"pick by operationName", "query A { a } mutation B { b }", ptr("B"), middleware.Mutation},
		{"pick query by operationName", "mutation B { b } query A { a }", ptr("A"), middleware.Query},
		{"null operationName with one operation", "mutation { a }", nil, middleware.Mutation},
		{"empty operationName with one operation", "query { a }", ptr(""), middleware.Query},

		{"several operations without name", "query A { a } query B { b }", nil, middleware.Unknown},
		{"operationName not found", "query A { a }", ptr("B"), middleware.Unknown},
		{"operationName on anonymous operation", "{ a }", ptr("A"), middleware.Unknown},
		{"operationName twice in document", "query A { a } mutation A { b }", ptr("A"), middleware.Unknown},
		{"empty document", "", nil, middleware.Unknown},
		{"only comments", "# nothing", nil, middleware.Unknown},
		{"only fragments", "fragment F on Q { a }", nil, middleware.Unknown},
		{"type system definition", "type Query { a: Int }", nil, middleware.Unknown},
		{"schema extension", "extend type Query { b: Int }", nil, middleware.Unknown},
		{"keyword prefix of a name", "queryX { a }", nil, middleware.Unknown},
		{"keyword is case-sensitive", "Mutation { a }", nil, middleware.Unknown},
		{"unclosed selection set", "query { a { b }", nil, middleware.Unknown},
		{"mismatched brackets", "query { a(x: 1} }", nil, middleware.Unknown},
		{"unterminated string", `{ a(s: "x) }`, nil, middleware.Unknown},
		{"string across lines", "{ a(s: \"x\n\") }", nil, middleware.Unknown},
		{"unterminated block string", `{ a(s: """x) }`, nil, middleware.Unknown},
		{"no selection set", "query Q", nil, middleware.Unknown},
		{"garbage in head", "query Q ! { a }", nil, middleware.Unknown},
		{"garbage between definitions", "{ a } ; { b }", nil, middleware.Unknown},
		{"stray closing brace", "{ a } }", nil, middleware.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := request(t, tt.query, tt.op)
			if got := middleware.OperationKind([]byte(body)); got != tt.want {
				t.Errorf("OperationKind(%s) = %v, want %v", body, got, tt.want)
			}
		})
	}
}

func TestOperationKindBodies(t *testing.T) {
	tests := []struct {
		name string
		body string
		want middleware.Kind
	}{
		{"variables and extensions", `{"query":"{a}","variables":{"query":"mutation{b}"},"extensions":{}}`, middleware.Query},
		{"whitespace around", " \n{\"query\":\"{a}\"}\n ", middleware.Query},
		{"operationName null", `{"query":"mutation{a}","operationName":null}`, middleware.Mutation},
		{"members in any order", `{"operationName":"B","query":"query A{a} subscription B{b}"}`, middleware.Subscription},
		{"escaped member name", `{"\u0071uery":"mutation{a}"}`, middleware.Mutation},
		{"escaped member name twice", `{"query":"{a}","\u0071uery":"mutation{b}"}`, middleware.Unknown},
		{"values of every JSON type skipped", `{"x":[1,{"y":"]\"}"}],"t":true,"f":false,"n":-1.5e3,"z":null,"e":{},"a":[],"query":"{a}"}`, middleware.Query},
		{"empty object", `{}`, middleware.Unknown},
		{"automatic persisted query with document", `{"query":"{a}","extensions":{"persistedQuery":{"version":1,"sha256Hash":"abc"}}}`, middleware.Query},

		{"persisted query without document", `{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"abc"}}}`, middleware.Unknown},
		{"document id", `{"id":"abc","variables":{}}`, middleware.Unknown},
		{"query null", `{"query":null}`, middleware.Unknown},
		{"query not a string", `{"query":{"a":1}}`, middleware.Unknown},
		{"operationName not a string", `{"query":"{a}","operationName":1}`, middleware.Unknown},
		{"query twice", `{"query":"{a}","query":"mutation{b}"}`, middleware.Unknown},
		{"operationName twice", `{"query":"query A{a} mutation B{b}","operationName":"A","operationName":"B"}`, middleware.Unknown},
		{"member names are case-sensitive", `{"Query":"{a}"}`, middleware.Unknown},
		{"trailing data", `{"query":"{a}"} {"query":"mutation{b}"}`, middleware.Unknown},
		{"truncated", `{"query":"{a}"`, middleware.Unknown},
		{"not JSON", `query { a }`, middleware.Unknown},
		{"JSON string", `"{a}"`, middleware.Unknown},
		{"empty", ``, middleware.Unknown},

		{"batch of queries", `[{"query":"{a}"},{"query":"query Q{b}","operationName":"Q"}]`, middleware.Query},
		{"batch with a mutation", `[{"query":"{a}"},{"query":"mutation{b}"}]`, middleware.Unknown},
		{"batch with an unknown entry", `[{"query":"{a}"},{"id":"x"}]`, middleware.Unknown},
		{"batch of one mutation", `[{"query":"mutation{b}"}]`, middleware.Unknown},
		{"empty batch", `[]`, middleware.Unknown},
		{"batch with trailing data", `[{"query":"{a}"}] x`, middleware.Unknown},
		{"nested batch", `[[{"query":"{a}"}]]`, middleware.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := middleware.OperationKind([]byte(tt.body)); got != tt.want {
				t.Errorf("OperationKind(%s) = %v, want %v", tt.body, got, tt.want)
			}
		})
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[middleware.Kind]string{
		middleware.Unknown:      "unknown",
		middleware.Query:        "query",
		middleware.Mutation:     "mutation",
		middleware.Subscription: "subscription",
		middleware.Kind(42):     "unknown",
	} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", int(k), got, want)
		}
	}
}

// FuzzOperationKind checks that OperationKind never panics and that its
// answer does not change under rewrites that a server ignores.
func FuzzOperationKind(f *testing.F) {
	for _, seed := range []struct{ query, name string }{
		{"{ a }", ""},
		{"query A { a } mutation B { b }", "B"},
		{`query Q($x: In = {a: "}"}) @d(s: """\"""""") { a # }` + "\n}", ""},
		{"subscription S { s } fragment F on T { f }", "S"},
		{"\uFEFF# c\r,mutation{a}", ""},
		{`{ a(s: "\u00e9\\") }`, ""},
	} {
		f.Add(seed.query, seed.name)
	}
	f.Fuzz(func(t *testing.T, query, name string) {
		body := request(t, query, &name)
		got := middleware.OperationKind([]byte(body))

		// Ignored tokens in front of the document change nothing.
		padded := request(t, "\uFEFF # comment\r\n,\t"+query, &name)
		if again := middleware.OperationKind([]byte(padded)); again != got {
			t.Errorf("with ignored tokens in front: %v, without: %v\nquery: %q", again, got, query)
		}

		// A batch is a query exactly when all its entries are.
		batch := "[" + body + "," + request(t, "{ a }", nil) + "]"
		wantBatch := middleware.Unknown
		if got == middleware.Query {
			wantBatch = middleware.Query
		}
		if b := middleware.OperationKind([]byte(batch)); b != wantBatch {
			t.Errorf("batch with %v entry: %v, want %v", got, b, wantBatch)
		}
	})
}

// FuzzOperationKindBody feeds raw bodies and checks OperationKind's own JSON
// walk against encoding/json: the body must get the kind of the canonical
// request that encoding/json reads from it.
func FuzzOperationKindBody(f *testing.F) {
	for _, seed := range []string{
		`{"query":"{a}"}`,
		`[{"query":"mutation{a}"}]`,
		`{"query":"{a}","query":"{b}"}`,
		`{"\u0071uery":"mutation{a}","variables":{"a":[1,"]",{"b":null}]}}`,
		`{"extensions":{"persistedQuery":{}}}`,
		`[`,
		`{"query":"\"\"\"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got := middleware.OperationKind(body)
		if want := referenceKind(t, body); got != want {
			t.Errorf("OperationKind(%q) = %v, encoding/json reading: %v", body, got, want)
		}
	})
}

// referenceKind reads body with encoding/json's decoder and classifies
// the canonical request (or batch) that it finds.
func referenceKind(t *testing.T, body []byte) middleware.Kind {
	if !json.Valid(body) {
		return middleware.Unknown
	}
	var batch []json.RawMessage
	if json.Unmarshal(body, &batch) == nil {
		if len(batch) == 0 {
			return middleware.Unknown
		}
		for _, entry := range batch {
			if referenceRequest(t, entry) != middleware.Query {
				return middleware.Unknown
			}
		}
		return middleware.Query
	}
	return referenceRequest(t, body)
}

// referenceRequest is referenceKind for one request object.
func referenceRequest(t *testing.T, body []byte) middleware.Kind {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return middleware.Unknown
	}
	var query, name *string
	var haveQuery, haveName bool
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("valid JSON, but: %v", err)
		}
		var err2 error
		switch tok {
		case "query":
			if haveQuery {
				return middleware.Unknown
			}
			haveQuery, err2 = true, dec.Decode(&query)
		case "operationName":
			if haveName {
				return middleware.Unknown
			}
			haveName, err2 = true, dec.Decode(&name)
		default:
			var skip json.RawMessage
			err2 = dec.Decode(&skip)
		}
		if err2 != nil {
			return middleware.Unknown // not a string
		}
	}
	if query == nil {
		return middleware.Unknown
	}
	canonical := request(t, *query, name)
	return middleware.OperationKind([]byte(canonical))
}
