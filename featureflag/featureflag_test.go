package featureflag_test

import (
	"context"
	"testing"
	"time"

	"github.com/open-feature/go-sdk/openfeature"
	"github.com/open-feature/go-sdk/openfeature/isolated"
	"github.com/open-feature/go-sdk/openfeature/memprovider"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/featureflag"
)

// client returns a client of an OpenFeature API of the test's own, with an
// in-memory provider of flags, ready; the API is shut down when the test
// ends.
func client(t *testing.T, flags map[string]memprovider.InMemoryFlag) (*openfeature.Client, *memprovider.InMemoryProvider) {
	t.Helper()
	api := isolated.NewAPI()
	t.Cleanup(func() { api.Shutdown(context.Background()) })
	p := memprovider.NewInMemoryProvider(flags)
	if err := api.SetProviderAndWait(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return api.NewClient(), p
}

// byUser is a flag whose variant is "sockets" for the targeting key
// "alice" on source schema products with operation Top, "legacy" for
// anyone else.
func byUser() memprovider.InMemoryFlag {
	eval := func(f memprovider.InMemoryFlag, fc openfeature.FlattenedContext) (any, openfeature.ProviderResolutionDetail) {
		if fc[openfeature.TargetingKey] == "alice" && fc[featureflag.AttrSourceSchema] == "products" && fc[featureflag.AttrOperationName] == "Top" {
			return f.Variants["sockets"], openfeature.ProviderResolutionDetail{Variant: "sockets", Reason: openfeature.TargetingMatchReason}
		}
		return f.Variants["legacy"], openfeature.ProviderResolutionDetail{Variant: "legacy", Reason: openfeature.DefaultReason}
	}
	return memprovider.InMemoryFlag{Key: "rollout", State: memprovider.Enabled, DefaultVariant: "legacy",
		Variants: map[string]any{"sockets": "1", "legacy": "0"}, ContextEvaluator: &eval}
}

// TestFlags: the evaluation context carries the targeting key, the source
// schema and the operation name; the answer its value, variant and the
// provider's reason; an error names the flag and the SDK's code.
func TestFlags(t *testing.T) {
	c, _ := client(t, map[string]memprovider.InMemoryFlag{
		"rollout": byUser(),
		"kill":    {Key: "kill", State: memprovider.Enabled, DefaultVariant: "on", Variants: map[string]any{"on": true}},
	})
	f := featureflag.OpenFeature(c)
	ctx := context.Background()
	for _, tt := range []struct {
		in   transport.FlagContext
		want transport.FlagAnswer
	}{
		{transport.FlagContext{TargetingKey: "alice", SourceSchema: "products", OperationName: "Top"}, transport.FlagAnswer{Value: "1", Variant: "sockets", Reason: "TARGETING_MATCH"}},
		{transport.FlagContext{TargetingKey: "alice", SourceSchema: "reviews", OperationName: "Top"}, transport.FlagAnswer{Value: "0", Variant: "legacy", Reason: "DEFAULT"}},
		{transport.FlagContext{TargetingKey: "bob", SourceSchema: "products", OperationName: "Top"}, transport.FlagAnswer{Value: "0", Variant: "legacy", Reason: "DEFAULT"}},
	} {
		if got := f.StringFlag(ctx, "rollout", tt.in); got != tt.want {
			t.Errorf("StringFlag(%+v) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
	if got := f.BoolFlag(ctx, "kill"); !got.On || got.Err != nil || got.Variant != "on" {
		t.Errorf("BoolFlag(kill) = %+v, want on", got)
	}
	got := f.StringFlag(ctx, "missing", transport.FlagContext{})
	if got.Err == nil || got.Err.Error() != `flag "missing": FLAG_NOT_FOUND: error code: FLAG_NOT_FOUND: flag for key missing not found` {
		t.Errorf("StringFlag(missing) = %+v, want an error naming the flag and FLAG_NOT_FOUND", got)
	}
}

// TestOnChange: a change of the provider's flags calls the callback, and
// none after stop.
func TestOnChange(t *testing.T) {
	c, p := client(t, map[string]memprovider.InMemoryFlag{"rollout": byUser()})
	changed := make(chan struct{}, 16)
	stop := featureflag.OpenFeature(c).OnChange(func() { changed <- struct{}{} })
	<-changed // the provider is ready: a ready handler is called at once
	p.UpdateFlags(map[string]memprovider.InMemoryFlag{"rollout": byUser()})
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no call after the flags changed")
	}
	stop()
	p.UpdateFlags(map[string]memprovider.InMemoryFlag{})
	// Another handler, registered after stop, sees the next change; by
	// then the stopped one would have been called too, had it stayed.
	seen := make(chan struct{}, 16)
	cb := func(openfeature.EventDetails) { seen <- struct{}{} }
	c.AddHandler(openfeature.ProviderConfigChange, &cb)
	p.UpdateFlags(map[string]memprovider.InMemoryFlag{"rollout": byUser()})
	<-seen
	select {
	case <-changed:
		t.Error("the callback was called after stop")
	default:
	}
}

// TestTraceHook: each evaluation adds a feature_flag.evaluation event to
// the span of its context, with the semantic conventions' attributes; an
// error's event has error.type.
func TestTraceHook(t *testing.T) {
	c, _ := client(t, map[string]memprovider.InMemoryFlag{"rollout": byUser()})
	c.AddHooks(featureflag.TraceHook())
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	ctx, span := tp.Tracer("gateway").Start(context.Background(), "POST /graphql")
	f := featureflag.OpenFeature(c)
	f.StringFlag(ctx, "rollout", transport.FlagContext{TargetingKey: "alice", SourceSchema: "products", OperationName: "Top"})
	f.StringFlag(ctx, "missing", transport.FlagContext{TargetingKey: "alice"})
	f.StringFlag(context.Background(), "rollout", transport.FlagContext{}) // no span: no event, no error
	span.End()

	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans ended, want 1", len(spans))
	}
	events := spans[0].Events()
	if len(events) != 2 {
		t.Fatalf("%d events, want 2: %+v", len(events), events)
	}
	want := []map[attribute.Key]string{
		{"feature_flag.key": "rollout", "feature_flag.result.variant": "sockets", "feature_flag.result.reason": "targeting_match",
			"feature_flag.context.id": "alice", "feature_flag.provider.name": "InMemoryProvider"},
		{"feature_flag.key": "missing", "feature_flag.result.reason": "error", "error.type": "flag_not_found", "feature_flag.context.id": "alice"},
	}
	for i, ev := range events {
		if ev.Name != "feature_flag.evaluation" {
			t.Errorf("event %d is %q, want feature_flag.evaluation", i, ev.Name)
		}
		got := map[attribute.Key]string{}
		for _, kv := range ev.Attributes {
			got[kv.Key] = kv.Value.Emit()
		}
		for k, v := range want[i] {
			if got[k] != v {
				t.Errorf("event %d: %s = %q, want %q (all: %v)", i, k, got[k], v, got)
			}
		}
	}
}
