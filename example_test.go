package transport_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
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
		Path:           env.PathSockets, // or FUSION_SOCKETS_TRANSPORT=1 with env.Load
		ForwardHeaders: []string{"Authorization"},
		SourceSchemas:  map[string]env.SourceSchema{"products": {URL: products.URL + "/graphql"}},
	}
	inv, err := transport.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer inv.Close()

	// In a gateway, transport.GatewayRequestHandler puts the incoming request into the
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

// ExampleTransport_Client gives a gateway that takes an *http.Client (as
// graphql-go-tools does) one that routes each request by its URL to the
// source schema configured there.
func ExampleTransport_Client() {
	reviews := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"data":{"path":%q}}`, r.URL.Path)
	}))
	defer reviews.Close()

	tr, err := transport.New(env.Config{
		Path:          env.PathSockets,
		SourceSchemas: map[string]env.SourceSchema{"reviews": {URL: reviews.URL + "/graphql"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()

	client := tr.Client()
	resp, err := client.Post(reviews.URL+"/graphql", "application/json", strings.NewReader(`{"query":"{ path }"}`))
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(string(body))

	// A URL that no source schema has is refused, unsent.
	_, err = client.Get("http://unknown.example/graphql")
	fmt.Println(errors.Is(err, fault.ErrUnknownSchema))
	// Output:
	// {"data":{"path":"/graphql"}}
	// true
}

// ExampleHeaderTimeoutError tells a header timeout from other failures and
// reads how long the request waited for a connection.
func ExampleHeaderTimeoutError() {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release // no headers until the example ends
	}))
	defer slow.Close()
	defer close(release)

	tr, err := transport.New(env.Config{
		Path: env.PathSockets,
		SourceSchemas: map[string]env.SourceSchema{"slow": {
			URL:      slow.URL,
			Settings: env.Settings{HeaderTimeout: 50 * time.Millisecond},
		}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()

	_, err = tr.Post(context.Background(), "slow", []byte(`{"query":"{ ok }"}`))
	var hte *fault.HeaderTimeoutError
	fmt.Println(errors.As(err, &hte), hte.Bound, errors.Is(err, context.DeadlineExceeded))
	// Output: true 50ms true
}

// A source schema that is down, behind a circuit breaker: after
// min_requests failures the breaker opens and calls fail at once, unsent,
// with an error that matches ErrCircuitOpen. The hook sees the change.
func ExampleWithResilienceHook() {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer down.Close()

	cfg := env.Config{SourceSchemas: map[string]env.SourceSchema{"products": {
		URL: down.URL + "/graphql",
		Settings: env.Settings{CircuitBreaker: env.BreakerSettings{
			Enabled: env.Enabled, MinRequests: 3, OpenFor: time.Minute,
		}},
	}}}
	inv, err := transport.New(cfg, transport.WithResilienceHook(func(ev transport.ResilienceEvent) {
		if ev.Kind == transport.BreakerStateChanged {
			fmt.Printf("%s: breaker %s -> %s\n", ev.Schema, ev.From, ev.To)
		}
	}), transport.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		log.Fatal(err)
	}
	defer inv.Close()

	for range 4 {
		resp, err := inv.Post(context.Background(), "products", []byte(`{"query":"{ ok }"}`))
		if errors.Is(err, fault.ErrCircuitOpen) {
			fmt.Println("refused, not sent")
			continue
		}
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		fmt.Println(resp.Status)
	}
	// Output:
	// 503 Service Unavailable
	// 503 Service Unavailable
	// products: breaker closed -> open
	// 503 Service Unavailable
	// refused, not sent
}
