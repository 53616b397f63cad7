package operation_test

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"
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
		{"only a case variant of query", `{"Query":"{a}"}`, operation.Unknown},

		// Issue 17, item 3: encoding/json (gqlgen, graph-gophers) matches
		// member names without case, the last one winning, and skips a
		// null; other servers match them exactly, or keep the first.
		{"case variant of query after it", `{"query":"query Q { a }","Query":"mutation M { pay(amount: 100) }"}`, operation.Unknown},
		{"case variant of query before it", `{"QUERY":"mutation M { pay }","query":"query Q { a }"}`, operation.Unknown},
		{"lower case query, upper case variant", `{"query":"{a}","qUeRy":"mutation{b}"}`, operation.Unknown},
		{"escaped case variant", `{"query":"{a}","\u0051uery":"mutation{b}"}`, operation.Unknown},
		{"case variant with delimiters (encoding/json/v2)", `{"query":"{a}","Q_u-ery":"mutation{b}"}`, operation.Unknown},
		{"case variant that is a query too", `{"query":"{a}","Query":"query B { b }"}`, operation.Query},
		{"query twice, both queries", `{"query":"{a}","query":"{b}"}`, operation.Query},
		{"every reading a mutation", `{"query":"mutation{a}","QUERY":"mutation{b}"}`, operation.Mutation},
		{"case variant null", `{"query":"{a}","Query":null}`, operation.Unknown},
		{"case variant not a string", `{"query":"{a}","Query":1}`, operation.Unknown},
		{"a non-ASCII name is another member", `{"query":"{a}","qu\u00e9ry":"mutation{b}","\u212Aquery":"mutation{c}"}`, operation.Query},
		{"case variant of operationName", `{"query":"query A{a} mutation B{b}","operationName":"A","operationname":"B"}`, operation.Unknown},
		{"case variants of operationName, both queries", `{"query":"query A{a} query B{b} mutation C{c}","operationName":"A","OperationName":"B"}`, operation.Query},
		{"only a case variant of operationName", `{"query":"query A{a} mutation B{b}","OperationName":"A"}`, operation.Unknown},
		{"only a case variant of operationName, one operation", `{"query":"query A{a}","OPERATIONNAME":"A"}`, operation.Query},
		{"operationName then null", `{"query":"query A{a} mutation B{b}","operationName":"A","operationName":null}`, operation.Unknown},
		{"operationName null twice", `{"query":"mutation{a}","operationName":null,"OperationName":null}`, operation.Mutation},
		{"case variant of operationName not a string", `{"query":"{a}","OperationName":true}`, operation.Unknown},
		{"8 query members", `{` + strings.Repeat(`"query":"{a}",`, 7) + `"query":"{a}"}`, operation.Query},
		{"9 query members", `{` + strings.Repeat(`"query":"{a}",`, 8) + `"query":"{a}"}`, operation.Unknown},
		{"9 operationName members", `{"query":"query A{a}",` + strings.Repeat(`"operationName":"A",`, 8) + `"operationName":"A"}`, operation.Unknown},
		{"batch with a case variant entry", `[{"query":"query Q { a }"},{"query":"query Q { a }","Query":"mutation M { pay(amount: 100) }"}]`, operation.Unknown},
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

func TestOfParams(t *testing.T) {
	tests := []struct {
		name     string
		rawQuery string
		want     operation.Kind
		document bool
	}{
		{"query", "query=%7B+a+%7D", operation.Query, true},
		{"named query with variables", "query=query+Q%28%24n%3A+Int%29+%7B+a%28n%3A+%24n%29+%7D&operationName=Q&variables=%7B%22n%22%3A1%7D", operation.Query, true},
		{"mutation", "query=mutation%7Bx%7D", operation.Mutation, true},
		{"operationName picks the query", "query=query+A%7Ba%7D+mutation+B%7Bb%7D&operationName=A", operation.Query, true},
		{"no parameters", "", operation.Unknown, false},
		{"no document", "extensions=%7B%22persistedQuery%22%3A%7B%7D%7D&x=1", operation.Unknown, false},
		{"empty document", "query=", operation.Unknown, true},
		{"query given twice", "query=%7Ba%7D&query=mutation%7Bb%7D", operation.Unknown, true},
		{"query given twice, both queries", "query=%7Ba%7D&query=%7Bb%7D", operation.Query, true},
		{"case variant of query", "query=%7Ba%7D&Query=mutation%7Bb%7D", operation.Unknown, true},
		{"only a case variant of query", "QUERY=%7Ba%7D", operation.Unknown, true},
		{"escaped name", "%71uery=%7Ba%7D", operation.Query, true},
		{"case variant of operationName", "query=query+A%7Ba%7D+mutation+B%7Bb%7D&operationName=A&OperationName=B", operation.Unknown, true},
		{"semicolon", "x=1;query=mutation%7Bb%7D", operation.Unknown, true},
		{"malformed escape", "query=%7Ba%7D&q=%zz", operation.Unknown, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, document := operation.OfParams(tt.rawQuery)
			if kind != tt.want || document != tt.document {
				t.Errorf("OfParams(%q) = %v, %v; want %v, %v", tt.rawQuery, kind, document, tt.want, tt.document)
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

		// The same request as a GET's parameters, or as a POST whose URL
		// repeats them, is classified alike.
		params := url.Values{"query": {query}, "operationName": {name}}.Encode()
		for _, c := range []struct {
			method, rawQuery string
			body             []byte
		}{{"POST", "", []byte(body)}, {"GET", params, nil}, {"POST", params, []byte(body)}} {
			if k := operation.Classify(c.method, c.rawQuery, c.body); k != got {
				t.Errorf("Classify(%s, %q, %q) = %v, Of: %v", c.method, c.rawQuery, c.body, k, got)
			}
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

		// Whenever Of says query, every server's reading is a query.
		if got == operation.Query {
			checkEveryReadingAQuery(t, []byte(body))
		}
		// A member that a Go server reads as "query" after the document,
		// holding a mutation, makes it no query; nor does a case variant
		// of operationName naming one.
		for _, variant := range []string{
			strings.TrimSuffix(body, "}") + `,"Query":"mutation M { m }"}`,
			strings.TrimSuffix(body, "}") + `,"\u0051UERY":"mutation M { m }"}`,
			strings.TrimSuffix(request(t, query+" mutation Pay { pay }", &name), "}") + `,"operationname":"Pay"}`,
		} {
			if k := operation.Of([]byte(variant)); k == operation.Query {
				t.Errorf("Of(%s) = query", variant)
			}
		}
	})
}

// FuzzOfBody feeds raw bodies and checks Of's own JSON walk against
// encoding/json: the body must get the kind that the rule Of documents
// gives, applied to the members that encoding/json's tokenizer reads.
func FuzzOfBody(f *testing.F) {
	for _, seed := range []string{
		`{"query":"{a}"}`,
		`[{"query":"mutation{a}"}]`,
		`{"query":"{a}","query":"{b}"}`,
		`{"\u0071uery":"mutation{a}","variables":{"a":[1,"]",{"b":null}]}}`,
		`{"extensions":{"persistedQuery":{}}}`,
		`[`,
		`{"query":"\"\"\"}`,
		`{"query":"query Q { a }","Query":"mutation M { pay(amount: 100) }"}`,
		`{"query":"{a}","OPERATION_NAME":null,"operationName":"x"}`,
		`{"query":"query A{a} query B{b}","operationName":"A","operationname":"B"}`,
		`{"query":"{a\n\u0062 \ud83d\ude00 \ud800}"}`,
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
// it as Of documents.
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

// readsAs reports whether a member named key (unescaped) is read as name
// by some server: encoding/json's bytes.EqualFold, or encoding/json/v2's
// case-insensitive match, which also leaves out '_' and '-'.
func readsAs(key, name string) bool {
	return strings.EqualFold(strings.NewReplacer("_", "", "-", "").Replace(key), name)
}

// referenceRequest is referenceKind for one request object: every
// document that a member read as "query" holds, with every name that a
// member read as "operationName" holds (and none unless one is named so
// exactly), classified as a canonical request.
func referenceRequest(t *testing.T, body []byte) operation.Kind {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return operation.Unknown
	}
	var queries []string
	var names []*string
	exactQuery, exactName := false, false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("valid JSON, but: %v", err)
		}
		key := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatalf("valid JSON, but: %v", err)
		}
		switch {
		case readsAs(key, "query"):
			var q *string
			if json.Unmarshal(raw, &q) != nil || q == nil {
				return operation.Unknown // not a string, or null
			}
			queries = append(queries, *q)
			exactQuery = exactQuery || key == "query"
		case readsAs(key, "operationName"):
			var n *string
			if json.Unmarshal(raw, &n) != nil {
				return operation.Unknown // neither a string nor null
			}
			names = append(names, n)
			exactName = exactName || key == "operationName"
		}
	}
	if !exactQuery || len(queries) > 8 || len(names) > 8 {
		return operation.Unknown
	}
	if !exactName {
		names = append(names, nil)
	}
	kind := operation.Unknown
	for _, q := range queries {
		for _, n := range names {
			k := operation.Of([]byte(request(t, q, n)))
			if k == operation.Unknown || kind != operation.Unknown && k != kind {
				return operation.Unknown
			}
			kind = k
		}
	}
	return kind
}

// goParams is what a Go GraphQL server decodes a request object into
// (gqlgen's graphql.RawParams, graph-gophers' relay handler).
type goParams struct {
	Query         string `json:"query"`
	OperationName string `json:"operationName"`
}

// FuzzOfMatchesEncodingJSON feeds raw bodies and checks that a Query from
// Of is a query to every server: the request (or each entry of a batch)
// that encoding/json decodes, as a Go server does, selects a query, and so
// do the readings that match member names exactly and keep the last or
// the first.
func FuzzOfMatchesEncodingJSON(f *testing.F) {
	for _, seed := range []string{
		`{"query":"{a}"}`,
		`{"query":"query Q { a }","Query":"mutation M { pay(amount: 100) }"}`,
		`{"Query":"mutation M { pay }","query":"query Q { a }"}`,
		`{"query":"{a}","QUERY":"mutation{b}"}`,
		`{"query":"{a}","\u0051uery":"mutation{b}"}`,
		`{"query":"{a}","qu\u0045ry":"mutation{b}"}`,
		`{"query":"{a}","query":"mutation{b}"}`,
		`{"query":"mutation{b}","query":"{a}"}`,
		`{"query":"mutation{b}","Query":null}`,
		`{"query":"{a}","Query":null}`,
		`{"query":"query A{a} mutation B{b}","operationName":"A","operationname":"B"}`,
		`{"query":"query A{a} mutation B{b}","operationName":"A","OperationName":null}`,
		`{"query":"query A{a} mutation B{b}","OperationName":"B"}`,
		`{"query":"query A{a} mutation B{b}","operationName":"A","operation_name":"B"}`,
		`[{"query":"{a}"},{"query":"{a}","Query":"mutation{b}"}]`,
		`[{"query":"{a}"},{"query":"query Q{b}","operationName":"Q"}]`,
		`[{"query":"{a}"},null]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if operation.Of(body) != operation.Query {
			return
		}
		checkEveryReadingAQuery(t, body)
	})
}

// checkEveryReadingAQuery fails t unless every server's reading of body, a
// request or a batch, selects a query.
func checkEveryReadingAQuery(t *testing.T, body []byte) {
	t.Helper()
	var reqs []goParams
	var err error
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) > 0 && b[0] == '[' {
		err = json.Unmarshal(body, &reqs)
	} else {
		var p goParams
		err = json.Unmarshal(body, &p)
		reqs = append(reqs, p)
	}
	if err != nil {
		t.Fatalf("Of(%q) = query, but encoding/json does not decode it: %v", body, err)
	}
	for _, p := range reqs {
		if k := operation.Of([]byte(request(t, p.Query, &p.OperationName))); k != operation.Query {
			t.Errorf("Of(%q) = query, but encoding/json reads query %q, operationName %q: %v", body, p.Query, p.OperationName, k)
		}
	}
	var entries []json.RawMessage
	if json.Unmarshal(body, &entries) != nil {
		entries = []json.RawMessage{body}
	}
	for _, e := range entries {
		for _, last := range []bool{true, false} {
			q, n := exactReading(t, e, last)
			if q == nil {
				t.Errorf("Of(%q) = query, but a reading of exact names keeping the last=%v finds no document", body, last)
				continue
			}
			if k := operation.Of([]byte(request(t, *q, n))); k != operation.Query {
				t.Errorf("Of(%q) = query, but a reading of exact names keeping the last=%v reads query %q, operationName %v: %v", body, last, *q, n, k)
			}
		}
	}
}

// exactReading reads the members named exactly "query" and
// "operationName" of obj as a JavaScript server does (JSON.parse: the last
// wins) or, with last false, as a parser that keeps the first. A null or
// missing member is nil.
func exactReading(t *testing.T, obj []byte, last bool) (query, name *string) {
	t.Helper()
	var members []struct {
		key   string
		value json.RawMessage
	}
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("Of says query, but %q is no object", obj)
	}
	for dec.More() {
		tok, _ := dec.Token()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatal(err)
		}
		members = append(members, struct {
			key   string
			value json.RawMessage
		}{tok.(string), raw})
	}
	var haveQuery, haveName bool
	for _, m := range members {
		var dst **string
		switch {
		case m.key == "query" && (last || !haveQuery):
			dst, haveQuery = &query, true
		case m.key == "operationName" && (last || !haveName):
			dst, haveName = &name, true
		default:
			continue
		}
		*dst = nil
		json.Unmarshal(m.value, dst)
	}
	return query, name
}
