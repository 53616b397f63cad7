package operation_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/fusiongo/transport/operation"
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

func TestOfDocuments(t *testing.T) {
	tests := []struct {
		name  string
		query string
		op    *string // operationName; nil: absent
		want  operation.Kind
	}{
		{"shorthand", "{ product { id } }", nil, operation.Query},
		{"query keyword", "query { product { id } }", nil, operation.Query},
		{"named query", "query Products { products { id } }", nil, operation.Query},
		{"no space after keyword", "query{a}", nil, operation.Query},
		{"mutation", "mutation { addReview { id } }", nil, operation.Mutation},
		{"subscription", "subscription OnReview { reviewAdded { id } }", nil, operation.Subscription},
		{"leading comment and commas", "# mutation { x }\n,, query Q { a }", nil, operation.Query},
		{"byte order mark", "\uFEFFmutation { a }", nil, operation.Mutation},
		{"CR ends comment", "# c\rmutation { a }", nil, operation.Mutation},
		{"variables with object default", `query Q($in: In = {a: "}", b: [1, 2]}) { a(in: $in) }`, nil, operation.Query},
		{"directives", `query Q @cached(ttl: 5) @live { a }`, nil, operation.Query},
		{"fragment before operation", "fragment F on Product { id } mutation M { a { ...F } }", nil, operation.Mutation},
		{"fragment with directive", "query { ...F } fragment F on Q @dir(x: 1) { a }", nil, operation.Query},
		{"brace in string", `{ a(s: "}") } `, nil, operation.Query},
		{"escaped quote in string", `{ a(s: "\"}") }`, nil, operation.Query},
		{"brace in block string", `{ a(s: """ } mutation { x } """) }`, nil, operation.Query},
		{"escaped triple quote in block string", `{ a(s: """ \""" } """) }`, nil, operation.Query},
		{"brace in comment inside selection", "{ a # }\n b }", nil, operation.Query},

		{"pick by operationName", "query A { a } mutation B { b }", ptr("B"), operation.Mutation},
		{"pick query by operationName", "mutation B { b } query A { a }", ptr("A"), operation.Query},
		{"null operationName with one operation", "mutation { a }", nil, operation.Mutation},
		{"empty operationName with one operation", "query { a }", ptr(""), operation.Query},

		{"several operations without name", "query A { a } query B { b }", nil, operation.Unknown},
		{"operationName not found", "query A { a }", ptr("B"), operation.Unknown},
		{"operationName on anonymous operation", "{ a }", ptr("A"), operation.Unknown},
		{"operationName twice in document", "query A { a } mutation A { b }", ptr("A"), operation.Unknown},
		{"empty document", "", nil, operation.Unknown},
		{"only comments", "# nothing", nil, operation.Unknown},
		{"only fragments", "fragment F on Q { a }", nil, operation.Unknown},
		{"type system definition", "type Query { a: Int }", nil, operation.Unknown},
		{"schema extension", "extend type Query { b: Int }", nil, operation.Unknown},
		{"keyword prefix of a name", "queryX { a }", nil, operation.Unknown},
		{"keyword is case-sensitive", "Mutation { a }", nil, operation.Unknown},
		{"unclosed selection set", "query { a { b }", nil, operation.Unknown},
		{"mismatched brackets", "query { a(x: 1} }", nil, operation.Unknown},
		{"unterminated string", `{ a(s: "x) }`, nil, operation.Unknown},
		{"string across lines", "{ a(s: \"x\n\") }", nil, operation.Unknown},
		{"unterminated block string", `{ a(s: """x) }`, nil, operation.Unknown},
		{"no selection set", "query Q", nil, operation.Unknown},
		{"garbage in head", "query Q ! { a }", nil, operation.Unknown},
		{"garbage between definitions", "{ a } ; { b }", nil, operation.Unknown},
		{"stray closing brace", "{ a } }", nil, operation.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := request(t, tt.query, tt.op)
			if got := operation.Of([]byte(body)); got != tt.want {
				t.Errorf("Of(%s) = %v, want %v", body, got, tt.want)
			}
		})
	}
}

func TestOfBodies(t *testing.T) {
	tests := []struct {
		name string
		body string
		want operation.Kind
	}{
		{"variables and extensions", `{"query":"{a}","variables":{"query":"mutation{b}"},"extensions":{}}`, operation.Query},
		{"whitespace around", " \n{\"query\":\"{a}\"}\n ", operation.Query},
		{"operationName null", `{"query":"mutation{a}","operationName":null}`, operation.Mutation},
		{"members in any order", `{"operationName":"B","query":"query A{a} subscription B{b}"}`, operation.Subscription},
		{"escaped member name", `{"\u0071uery":"mutation{a}"}`, operation.Mutation},
		{"escaped member name twice", `{"query":"{a}","\u0071uery":"mutation{b}"}`, operation.Unknown},
		{"values of every JSON type skipped", `{"x":[1,{"y":"]\"}"}],"t":true,"f":false,"n":-1.5e3,"z":null,"e":{},"a":[],"query":"{a}"}`, operation.Query},
		{"empty object", `{}`, operation.Unknown},
		{"automatic persisted query with document", `{"query":"{a}","extensions":{"persistedQuery":{"version":1,"sha256Hash":"abc"}}}`, operation.Query},

		{"persisted query without document", `{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"abc"}}}`, operation.Unknown},
		{"document id", `{"id":"abc","variables":{}}`, operation.Unknown},
		{"query null", `{"query":null}`, operation.Unknown},
		{"query not a string", `{"query":{"a":1}}`, operation.Unknown},
		{"operationName not a string", `{"query":"{a}","operationName":1}`, operation.Unknown},
		{"query twice", `{"query":"{a}","query":"mutation{b}"}`, operation.Unknown},
		{"operationName twice", `{"query":"query A{a} mutation B{b}","operationName":"A","operationName":"B"}`, operation.Unknown},
		{"member names are case-sensitive", `{"Query":"{a}"}`, operation.Unknown},
		{"trailing data", `{"query":"{a}"} {"query":"mutation{b}"}`, operation.Unknown},
		{"truncated", `{"query":"{a}"`, operation.Unknown},
		{"not JSON", `query { a }`, operation.Unknown},
		{"JSON string", `"{a}"`, operation.Unknown},
		{"empty", ``, operation.Unknown},

		{"batch of queries", `[{"query":"{a}"},{"query":"query Q{b}","operationName":"Q"}]`, operation.Query},
		{"batch with a mutation", `[{"query":"{a}"},{"query":"mutation{b}"}]`, operation.Unknown},
		{"batch with an unknown entry", `[{"query":"{a}"},{"id":"x"}]`, operation.Unknown},
		{"batch of one mutation", `[{"query":"mutation{b}"}]`, operation.Unknown},
		{"empty batch", `[]`, operation.Unknown},
		{"batch with trailing data", `[{"query":"{a}"}] x`, operation.Unknown},
		{"nested batch", `[[{"query":"{a}"}]]`, operation.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := operation.Of([]byte(tt.body)); got != tt.want {
				t.Errorf("Of(%s) = %v, want %v", tt.body, got, tt.want)
			}
		})
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[operation.Kind]string{
		operation.Unknown:      "unknown",
		operation.Query:        "query",
		operation.Mutation:     "mutation",
		operation.Subscription: "subscription",
		operation.Kind(42):     "unknown",
	} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", int(k), got, want)
		}
	}
}

// FuzzOf checks that Of never panics and that its answer does not change
// under rewrites that a server ignores.
func FuzzOf(f *testing.F) {
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
		got := operation.Of([]byte(body))

		// Ignored tokens in front of the document change nothing.
		padded := request(t, "\uFEFF # comment\r\n,\t"+query, &name)
		if again := operation.Of([]byte(padded)); again != got {
			t.Errorf("with ignored tokens in front: %v, without: %v\nquery: %q", again, got, query)
		}

		// A batch is a query exactly when all its entries are.
		batch := "[" + body + "," + request(t, "{ a }", nil) + "]"
		wantBatch := operation.Unknown
		if got == operation.Query {
			wantBatch = operation.Query
		}
		if b := operation.Of([]byte(batch)); b != wantBatch {
			t.Errorf("batch with %v entry: %v, want %v", got, b, wantBatch)
		}
	})
}

// FuzzOfBody feeds raw bodies and checks Of's own JSON walk against
// encoding/json: the body must get the kind of the canonical request that
// encoding/json reads from it.
func FuzzOfBody(f *testing.F) {
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
		got := operation.Of(body)
		if want := referenceKind(t, body); got != want {
			t.Errorf("Of(%q) = %v, encoding/json reading: %v", body, got, want)
		}
	})
}

// referenceKind reads body with encoding/json's decoder and classifies
// the canonical request (or batch) that it finds.
func referenceKind(t *testing.T, body []byte) operation.Kind {
	if !json.Valid(body) {
		return operation.Unknown
	}
	var batch []json.RawMessage
	if json.Unmarshal(body, &batch) == nil {
		if len(batch) == 0 {
			return operation.Unknown
		}
		for _, entry := range batch {
			if referenceRequest(t, entry) != operation.Query {
				return operation.Unknown
			}
		}
		return operation.Query
	}
	return referenceRequest(t, body)
}

// referenceRequest is referenceKind for one request object.
func referenceRequest(t *testing.T, body []byte) operation.Kind {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return operation.Unknown
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
				return operation.Unknown
			}
			haveQuery, err2 = true, dec.Decode(&query)
		case "operationName":
			if haveName {
				return operation.Unknown
			}
			haveName, err2 = true, dec.Decode(&name)
		default:
			var skip json.RawMessage
			err2 = dec.Decode(&skip)
		}
		if err2 != nil {
			return operation.Unknown // not a string
		}
	}
	if query == nil {
		return operation.Unknown
	}
	canonical := request(t, *query, name)
	return operation.Of([]byte(canonical))
}
