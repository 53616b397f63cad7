package transport_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/open-feature/go-sdk/openfeature/isolated"
	"github.com/open-feature/go-sdk/openfeature/memprovider"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/featureflag"
)

// ExampleWithRollout moves a running gateway along the runtime ladder with
// an OpenFeature flag: legacy, a canary share of users, every user, and
// back, each step a change of the flag's variant, with no restart and no
// reload. The in-memory provider stands for flagd, LaunchDarkly, Unleash
// or any other.
func ExampleWithRollout() {
	// A source schema that says which path each request came by: the
	// legacy path asks for gzip, the sockets path does not.
	schema := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept-Encoding") == "" {
			io.WriteString(w, "sockets")
		} else {
			io.WriteString(w, "legacy")
		}
	}))
	defer schema.Close()

	// OpenFeature: an API with its provider (usually openfeature's
	// global one), a client, and the hook that puts each evaluation on
	// the gateway request's span.
	api := isolated.NewAPI()
	defer api.Shutdown(context.Background())
	flag := func(value string) map[string]memprovider.InMemoryFlag {
		return map[string]memprovider.InMemoryFlag{transport.DefaultRolloutFlag: {
			Key: transport.DefaultRolloutFlag, State: memprovider.Enabled, DefaultVariant: "step",
			Variants: map[string]any{"step": value},
		}}
	}
	provider := memprovider.NewInMemoryProvider(flag("0"))
	if err := api.SetProviderAndWait(context.Background(), provider); err != nil {
		log.Fatal(err)
	}
	client := api.NewClient()
	client.AddHooks(featureflag.TraceHook())

	// The startup switch (FUSION_SOCKETS_TRANSPORT, here legacy) is the
	// fallback; the flag decides per gateway request, per user.
	inv, err := transport.New(env.Config{SourceSchemas: map[string]env.SourceSchema{"products": {URL: schema.URL}}},
		transport.WithRollout(featureflag.OpenFeature(client), transport.RolloutOptions{
			TargetingHeader: "X-User-Id",
			// Every gateway request asks the provider, so that this
			// example sees each step at once. Leave it unset in a gateway:
			// answers are kept until the provider announces a change.
			CacheTTL: -1,
		}))
	if err != nil {
		log.Fatal(err)
	}
	defer inv.Close()

	// What the gateway does for each request it serves
	// (transport.GatewayRequestHandler does the WithGatewayRequest).
	served := func(user string) string {
		gw := httptest.NewRequest(http.MethodPost, "/graphql", nil)
		gw.Header.Set("X-User-Id", user)
		ctx := transport.WithGatewayRequest(context.Background(), gw)
		resp, err := inv.Post(ctx, "products", []byte(`{"query":"{ topProducts { upc } }"}`))
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	// Each user's side under a canary share is fixed (a hash of the flag
	// key and the user), on every gateway replica; a larger share only
	// adds users. The last step is a rollback: instant, for every user.
	for _, step := range []string{"0", "canary:50%", "1", "0"} {
		provider.UpdateFlags(flag(step))
		fmt.Printf("%-11s alice: %-7s bob: %-7s carol: %s\n", step, served("alice"), served("bob"), served("carol"))
	}
	// Output:
	// 0           alice: legacy  bob: legacy  carol: legacy
	// canary:50%  alice: legacy  bob: legacy  carol: sockets
	// 1           alice: sockets bob: sockets carol: sockets
	// 0           alice: legacy  bob: legacy  carol: legacy
}
