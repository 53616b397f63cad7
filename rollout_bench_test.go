package transport_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/open-feature/go-sdk/openfeature/isolated"
	"github.com/open-feature/go-sdk/openfeature/memprovider"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/featureflag"
)

// benchBody is a source schema call's body as a gateway's query planner
// writes it.
var benchBody = []byte(`{"query":"query Products__products__0 { topProducts(first: 5) { upc name price } }","operationName":"Products__products__0","variables":{}}`)

// benchRollout is an invoker whose rollout reads flags from an in-memory
// provider (canary:50%, keyed by a user header), and a gateway request
// with a user id. Nothing is sent: the schema's URL is never dialled.
func benchRollout(b *testing.B, o transport.RolloutOptions) (*transport.Transport, *http.Request) {
	api := isolated.NewAPI()
	b.Cleanup(func() { api.Shutdown(context.Background()) })
	p := memprovider.NewInMemoryProvider(map[string]memprovider.InMemoryFlag{
		transport.DefaultRolloutFlag: {Key: transport.DefaultRolloutFlag, State: memprovider.Enabled, DefaultVariant: "half",
			Variants: map[string]any{"half": "canary:50%"}},
		transport.DefaultKillFlag: {Key: transport.DefaultKillFlag, State: memprovider.Enabled, DefaultVariant: "off",
			Variants: map[string]any{"off": false}},
	})
	if err := api.SetProviderAndWait(context.Background(), p); err != nil {
		b.Fatal(err)
	}
	o.TargetingHeader = userHeader
	inv := newInvoker(b, config(env.PathLegacy, "products", "http://127.0.0.1:1/graphql"), transport.WithRollout(featureflag.OpenFeature(api.NewClient()), o))
	gw := httptest.NewRequest(http.MethodPost, "/graphql", nil)
	gw.Header.Set(userHeader, "user-42")
	return inv, gw
}

// BenchmarkRolloutGatewayRequest is the decision of one gateway request,
// its first call: the gateway request's context (WithGatewayRequest, one
// allocation that a gateway makes without the rollout too), then the
// decision. cached: the answer kept for the evaluation context (the usual
// case: the provider announced no change within CacheTTL); evaluated: no
// cache (CacheTTL < 0), the OpenFeature SDK evaluates every gateway
// request.
func BenchmarkRolloutGatewayRequest(b *testing.B) {
	for _, c := range []struct {
		name string
		ttl  int64
	}{{"cached", 0}, {"evaluated", -1}} {
		b.Run(c.name, func(b *testing.B) {
			inv, gw := benchRollout(b, transport.RolloutOptions{CacheTTL: time.Duration(c.ttl)})
			b.ReportAllocs()
			for b.Loop() {
				ctx := transport.WithGatewayRequest(context.Background(), gw)
				if _, err := inv.RolloutPath(ctx, "products", benchBody); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRolloutLaterCall is a gateway request's call after its first:
// the decision is read from the gateway request's memo.
func BenchmarkRolloutLaterCall(b *testing.B) {
	inv, gw := benchRollout(b, transport.RolloutOptions{})
	ctx := transport.WithGatewayRequest(context.Background(), gw)
	if _, err := inv.RolloutPath(ctx, "products", benchBody); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := inv.RolloutPath(ctx, "products", benchBody); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGatewayRequestContext is WithGatewayRequest alone: what
// BenchmarkRolloutGatewayRequest costs without the rollout.
func BenchmarkGatewayRequestContext(b *testing.B) {
	gw := httptest.NewRequest(http.MethodPost, "/graphql", nil)
	b.ReportAllocs()
	for b.Loop() {
		if transport.WithGatewayRequest(context.Background(), gw) == nil {
			b.Fatal("no context")
		}
	}
}
