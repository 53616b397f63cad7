// Command example runs graphql-go-tools' federation gateway with
// github.com/fusiongo/transport as its subgraph HTTP client: the engine
// sends each subgraph request to a URL, and Transport.Client routes it
// to the source schema configured at that URL, on the path the
// configuration chooses (legacy, sockets, mixed or shadow).
//
//	go run ./example                 # legacy path
//	go run ./example sockets         # sockets path
package main

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/jensneuse/abstractlogger"
	"github.com/wundergraph/graphql-go-tools/execution/federationtesting"
	"github.com/wundergraph/graphql-go-tools/execution/federationtesting/gateway"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
)

func main() {
	// The accounts, products and reviews subgraphs, on loopback.
	setup, err := federationtesting.NewFederationSetup()
	if err != nil {
		log.Fatal(err)
	}
	defer setup.Close()

	// 1. The library's configuration: one source schema per subgraph URL,
	//    and the gateway request headers to forward. In production this is
	//    env.Load's YAML file and environment.
	cfg := env.Config{
		Path:           env.PathLegacy,
		ForwardHeaders: []string{"Authorization", "X-Request-Id"},
		SourceSchemas: map[string]env.SourceSchema{
			"accounts": {URL: setup.AccountsUpstreamServer.URL},
			"products": {URL: setup.ProductsUpstreamServer.URL},
			"reviews":  {URL: setup.ReviewsUpstreamServer.URL},
		},
	}
	if len(os.Args) > 1 {
		cfg.Path = env.Path(os.Args[1])
	}
	inv, err := transport.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer inv.Close()

	// 2. The gateway, with the library's *http.Client where it takes one.
	//    The subgraph URLs in its router config are the ones above.
	routerConfig := bytes.Clone(federationtesting.RouterConfigJson)
	routerConfig = bytes.ReplaceAll(routerConfig, []byte("http://accounts-url-placeholder"), []byte(setup.AccountsUpstreamServer.URL))
	routerConfig = bytes.ReplaceAll(routerConfig, []byte("http://products-url-placeholder"), []byte(setup.ProductsUpstreamServer.URL))
	routerConfig = bytes.ReplaceAll(routerConfig, []byte("http://reviews-url-placeholder"), []byte(setup.ReviewsUpstreamServer.URL))
	gw, err := gateway.NewGateway(routerConfig, inv.Client(), abstractlogger.NoopLogger, false)
	if err != nil {
		log.Fatal(err)
	}

	// 3. transport.GatewayRequestHandler puts each gateway request in its context; the
	//    engine passes that context to its subgraph requests, so the
	//    library forwards the headers that cfg names.
	srv := httptest.NewServer(transport.GatewayRequestHandler(gw))
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewBufferString(`{"query":"{ topProducts { name reviews { body author { username } } } }"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Printf("%s path: %s %s\n", cfg.Path, resp.Status, body)
}
