// Package corpus holds the built-in corpus: source schema requests that a
// gateway sends to the benchmark's four source schemas (see package
// cmd/fusion-transport/internal/schemas), for the compare harness and the benchmarks to replay.
//
// Builtin is JSON Lines, one request a line:
//
//	{"name":"accounts/users","schema":"accounts","body":{"query":"{ users { id name } }"},"headers":{"Authorization":"Bearer 1"}}
//
// Its fields are:
//   - name: unique and stable, "schema/short-description".
//   - schema: the source schema it goes to: accounts, inventory, products or
//     reviews.
//   - body: the JSON request body, sent verbatim as the POST body: an object,
//     or an array of them for request batching. "variables" may be an array
//     (variable batching).
//   - headers: optional; the gateway request's headers when the request is
//     made. The harness forwards only Authorization and X-Request-Id.
//   - method, path: optional and absent here; the harness POSTs body to the
//     schema's URL.
//
// The corpus covers plain queries on every schema, variables, operationName
// selection, GraphQL errors (unknown field, wrong variable type, missing
// required variable, syntax), entity lookups with known and unknown
// representations, request, variable and alias batching, accounts' me with an
// Authorization header, _service { sdl }, malformed requests that get 400,
// and the per-wave fetches of the benchmark's deep-recursion query (names
// containing "deep-wave").
package corpus

import _ "embed"

// Builtin is the built-in corpus, JSON Lines as described in the package
// documentation.
//
//go:embed builtin.jsonl
var Builtin []byte
