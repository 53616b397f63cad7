package operation

import (
	"encoding/json"
	"net/url"
)

// OfParams returns the kind of operation that a GraphQL-over-HTTP GET
// request asks a source schema to run, from the query string of its URL
// (URL.RawQuery), and whether any parameter can be read as the document.
// Classify, which also weighs the method and the body, is the rule for a
// whole request; OfParams is its reading of the query string.
//
// The parameters are read as Of reads the members of a request object:
// every value of every parameter whose name matches "query" or
// "operationName" without case (and without '_' and '-') is tried, since
// servers differ there too (a Go server takes the first value of the
// exact name, some a case-insensitive name or the last value), and the
// answer is Query only if every combination selects a query. A query
// string that url.ParseQuery rejects (a semicolon, a malformed escape) is
// Unknown with document true: servers split it differently.
//
// document is false when no parameter name matches "query": a GET without
// a document, which a caller may judge by its own rule.
func OfParams(rawQuery string) (kind Kind, document bool) {
	p, ok := readParams(rawQuery)
	switch {
	case !ok:
		return Unknown, true
	case !p.document:
		return Unknown, false
	}
	return requestKind(p.object()), true
}

// params are the parameters of a query string that a server may read as
// members of a request object: those whose name matches "query" or
// "operationName" (foldMatch), as JSON members.
type params struct {
	members  []byte // `"name":"value"` pairs, comma-separated; empty if none
	document bool   // a parameter's name matches "query"
}

// readParams reads rawQuery's parameters; ok is false if url.ParseQuery
// rejects it.
func readParams(rawQuery string) (p params, ok bool) {
	if rawQuery == "" {
		return params{}, true
	}
	values, err := url.ParseQuery(rawQuery)
	if err != nil {
		return params{}, false
	}
	for name, vs := range values {
		n := []byte(name)
		isQuery := foldMatch(n, "query")
		if !isQuery && !foldMatch(n, "operationName") {
			continue
		}
		p.document = p.document || isQuery
		key, _ := json.Marshal(name)
		for _, v := range vs {
			value, _ := json.Marshal(v)
			if len(p.members) > 0 {
				p.members = append(p.members, ',')
			}
			p.members = append(append(append(p.members, key...), ':'), value...)
		}
	}
	return p, true
}

// object returns p's members as a JSON object.
func (p params) object() []byte {
	return append(append([]byte{'{'}, p.members...), '}')
}
