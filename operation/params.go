package operation

import (
	"encoding/json"
	"net/url"
)

// OfParams returns the kind of operation that a GraphQL-over-HTTP GET
// request asks a source schema to run, from the query string of its URL
// (URL.RawQuery), and whether any parameter can be read as the document.
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
	params, err := url.ParseQuery(rawQuery)
	if err != nil {
		return Unknown, true
	}
	obj := []byte{'{'}
	for name, values := range params {
		n := []byte(name)
		isQuery := foldMatch(n, "query")
		if !isQuery && !foldMatch(n, "operationName") {
			continue
		}
		document = document || isQuery
		key, _ := json.Marshal(name)
		for _, v := range values {
			value, _ := json.Marshal(v)
			if len(obj) > 1 {
				obj = append(obj, ',')
			}
			obj = append(append(append(obj, key...), ':'), value...)
		}
	}
	if !document {
		return Unknown, false
	}
	return requestKind(append(obj, '}')), true
}
