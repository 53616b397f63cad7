package sockets_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/sockets"
)

// handlerTransport routes requests to an in-process handler.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	return rec.Result(), nil
}

// Example_inProcess routes a source schema to an in-process handler with a
// RoundTripper hook, as tests do; header rules and timeouts still apply.
func Example_inProcess() {
	products := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"data":{"tenant":%q}}`, r.Header.Get("X-Tenant"))
	})
	cfg := env.Config{SourceSchemas: map[string]env.SourceSchema{
		"products": {URL: "http://products.internal/graphql", Settings: env.Settings{
			Headers: env.HeaderSettings{Set: map[string]string{"X-Tenant": "acme"}},
		}},
	}}
	inv, err := sockets.New(cfg, sockets.Options{Schemas: map[string]sockets.SchemaHooks{
		"products": {RoundTripper: handlerTransport{products}},
	}})
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
