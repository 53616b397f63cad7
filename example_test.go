package transport_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
)

// ExampleNew builds the path the configuration selects and posts a GraphQL
// request to a source schema, forwarding the gateway request's
// Authorization header.
func ExampleNew() {
	products := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"data":{"auth":%q}}`, r.Header.Get("Authorization"))
	}))
	defer products.Close()

	cfg := env.Config{
		Transport:      env.PathSockets, // or FUSION_SOCKETS_TRANSPORT=1 with env.Load
		ForwardHeaders: []string{"Authorization"},
		SourceSchemas:  map[string]env.SourceSchema{"products": {URL: products.URL + "/graphql"}},
	}
	inv, err := transport.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer inv.Close()

	// In a gateway, transport.Middleware puts the incoming request into the
	// context; here we do it by hand.
	gatewayReq, _ := http.NewRequest("POST", "http://gateway/graphql", nil)
	gatewayReq.Header.Set("Authorization", "Bearer user-1")
	ctx := transport.WithGatewayRequest(context.Background(), gatewayReq)

	resp, err := inv.Post(ctx, "products", []byte(`{"query":"{ auth }"}`))
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output: 200 {"data":{"auth":"Bearer user-1"}}
}
