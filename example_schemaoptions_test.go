package transport_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
)

// inProcess serves requests with an http.Handler, in process.
type inProcess struct{ h http.Handler }

func (p inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	p.h.ServeHTTP(rec, req)
	return rec.Result(), nil
}

// ExampleWithSchemaOptions routes a source schema to an in-process handler
// with a RoundTripper hook, as tests do; header rules and timeouts still
// apply.
func ExampleWithSchemaOptions() {
	products := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"data":{"tenant":%q}}`, r.Header.Get("X-Tenant"))
	})
	cfg := env.Config{Path: env.PathSockets, SourceSchemas: map[string]env.SourceSchema{
		"products": {URL: "http://products.internal/graphql", Settings: env.Settings{
			Headers: env.HeaderSettings{Set: map[string]string{"X-Tenant": "acme"}},
		}},
	}}
	inv, err := transport.New(cfg, transport.WithSchemaOptions("products", transport.SchemaOptions{
		RoundTripper: inProcess{products},
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer inv.Close()
	resp, err := inv.Post(context.Background(), "products", []byte(`{"query":"{ tenant }"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(string(body))
	// Output: {"data":{"tenant":"acme"}}
}
