package featureflag

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/open-feature/go-sdk/openfeature"
	oftelemetry "github.com/open-feature/go-sdk/openfeature/telemetry"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// TraceHook returns an OpenFeature hook that adds each flag evaluation, as
// the OpenTelemetry semantic conventions for feature flags name it, to the
// span of the evaluation's context: an event "feature_flag.evaluation" with
// feature_flag.key, feature_flag.provider.name, feature_flag.result.variant
// (or feature_flag.result.value when the provider names no variant),
// feature_flag.result.reason, feature_flag.context.id (the targeting key),
// and error.type and error.message when it failed (the SDK's
// telemetry.CreateEvaluationEvent builds them). The rollout evaluates with
// the gateway request's context, so the event lands on the gateway's span.
// A context without a recording span costs nothing. Add it to a client
// (Client.AddHooks) or to every client (openfeature.AddHooks).
func TraceHook() openfeature.Hook {
	return traceHook{}
}

type traceHook struct {
	openfeature.UnimplementedHook
}

func (traceHook) Finally(ctx context.Context, hc openfeature.HookContext, d openfeature.InterfaceEvaluationDetails, _ openfeature.HookHints) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	ev := oftelemetry.CreateEvaluationEvent(hc, d)
	kvs := make([]attribute.KeyValue, 0, len(ev.Attributes))
	for _, k := range slices.Sorted(maps.Keys(ev.Attributes)) {
		kvs = append(kvs, attributeOf(k, ev.Attributes[k]))
	}
	span.AddEvent(ev.Name, trace.WithAttributes(kvs...))
}

// attributeOf is an event attribute of a flag's value or metadata, by
// its type.
func attributeOf(k string, v any) attribute.KeyValue {
	key := attribute.Key(k)
	switch v := v.(type) {
	case string:
		return key.String(v)
	case bool:
		return key.Bool(v)
	case int64:
		return key.Int64(v)
	case int:
		return key.Int(v)
	case float64:
		return key.Float64(v)
	}
	return key.String(fmt.Sprint(v))
}
