package transport_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/fusiongo/transport/env"
)

// TestClassifyCanaryResend: under a canary at rate 1, a request whose
// sockets attempt the server took and then dropped without an answer goes
// again on legacy only if operation.Classify calls it a query, by the rule
// that retry, hedging and dedupe follow: the method, the URL's query
// string and the body together. A POST whose body is a query but whose URL
// carries a mutation as ?query= (which some servers read first) is no
// query; nor is a POST whose body is over operation.MaxBodyBytes, through
// Do or Post.
func TestClassifyCanaryResend(t *testing.T) {
	q := func(document string) string { return "?" + url.Values{"query": {document}}.Encode() }
	const query = `{"query":"query Q { a }"}`
	tests := []struct {
		name      string
		method    string
		suffix    string // after the schema's URL
		body      string
		post      bool // sent with Post (the schema's URL), not Do
		wantAgain bool
	}{
		{"GET query", http.MethodGet, q("query Q { a }"), "", false, true},
		{"GET mutation", http.MethodGet, q("mutation M { pay(amount: 100) }"), "", false, false},
		{"POST query", http.MethodPost, "", query, false, true},
		{"POST query, a mutation in the URL", http.MethodPost, q("mutation M { pay(amount: 100) }"), query, false, false},
		{"POST query, a query in the URL", http.MethodPost, q("query Q { a }"), query, false, true},
		{"POST query over the bound", http.MethodPost, "", strings.Repeat(" ", 1<<20) + query, false, false},
		{"Post query", http.MethodPost, "", query, true, true},
		{"Post mutation", http.MethodPost, "", `{"query":"mutation M { pay(amount: 100) }"}`, true, false},
		{"Post query over the bound", http.MethodPost, "", strings.Repeat(" ", 1<<20) + query, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
				if bySockets(r) {
					if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
						conn.Close()
					}
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"data":{"a":1}}`))
			})
			inv := newInvoker(t, canaryConfig(env.CanarySettings{Rate: 1}, "products", srv.URL()))
			var resp *http.Response
			var err error
			if tt.post {
				resp, err = inv.Post(gatewayCtx(), "products", []byte(tt.body))
			} else {
				var body *strings.Reader
				if tt.body != "" {
					body = strings.NewReader(tt.body)
				}
				req, rerr := newRequestOrNil(tt.method, srv.URL()+tt.suffix, body)
				if rerr != nil {
					t.Fatal(rerr)
				}
				resp, err = inv.Do(gatewayCtx(), "products", req)
			}
			if err == nil {
				readAll(t, resp)
			}
			legacy, sockets := countPaths(srv)
			if again := legacy == 1; again != tt.wantAgain || sockets != 1 || (err == nil) != tt.wantAgain {
				t.Errorf("requests: %d by sockets, %d by legacy; the caller's error: %v. Want 1 by sockets, sent again on legacy: %v", sockets, legacy, err, tt.wantAgain)
			}
		})
	}
}

// newRequestOrNil is http.NewRequest with no body for a nil body (a nil
// *strings.Reader would be a non-nil io.Reader).
func newRequestOrNil(method, u string, body *strings.Reader) (*http.Request, error) {
	if body == nil {
		return http.NewRequest(method, u, nil)
	}
	req, err := http.NewRequest(method, u, body)
	if err == nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, err
}
