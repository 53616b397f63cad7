// Package featureflag connects the transport's runtime rollout
// (transport.WithRollout) to an OpenFeature client, and OpenTelemetry to
// OpenFeature's flag evaluations.
//
// Package transport reads its flags through transport.RolloutFlags, an
// interface of its own, so that it links no feature-flag SDK; this package
// is where the OpenFeature Go SDK (github.com/open-feature/go-sdk) comes in,
// for the programs that import it:
//
//	client := openfeature.NewClient("gateway")
//	client.AddHooks(featureflag.TraceHook()) // feature_flag.evaluation events on the gateway request's span
//	inv, err := transport.New(cfg, transport.WithRollout(featureflag.OpenFeature(client), transport.RolloutOptions{
//		TargetingHeader: "X-User-Id",
//	}))
//
// Any OpenFeature provider serves: flagd, LaunchDarkly, Unleash, Flipt,
// GrowthBook, the SDK's in-memory provider.
package featureflag

import (
	"context"
	"fmt"

	"github.com/open-feature/go-sdk/openfeature"

	transport "github.com/fusiongo/transport"
)

// The attributes of the evaluation context of a rollout decision, beside
// its targeting key (transport.FlagContext): a provider's targeting rules
// name them.
const (
	// AttrSourceSchema is the source schema of the gateway request's
	// first call.
	AttrSourceSchema = "sourceSchema"
	// AttrOperationName is that call's GraphQL operationName; absent when
	// it has none.
	AttrOperationName = "operationName"
)

// Flags is an OpenFeature client as transport.RolloutFlags. Safe for
// concurrent use, as the client is.
type Flags struct {
	client *openfeature.Client
}

var _ transport.RolloutFlags = (*Flags)(nil)

// OpenFeature returns client as the runtime rollout's flags. The client's
// hooks run on every evaluation (add TraceHook for OpenTelemetry), its
// provider's events tell the transport when the flags changed.
func OpenFeature(client *openfeature.Client) *Flags {
	return &Flags{client: client}
}

// StringFlag evaluates the string flag key with the evaluation context in:
// its targeting key, and the attributes AttrSourceSchema and
// AttrOperationName.
func (f *Flags) StringFlag(ctx context.Context, key string, in transport.FlagContext) transport.FlagAnswer {
	attrs := map[string]any{AttrSourceSchema: in.SourceSchema}
	if in.OperationName != "" {
		attrs[AttrOperationName] = in.OperationName
	}
	d, err := f.client.StringValueDetails(ctx, key, "", openfeature.NewEvaluationContext(in.TargetingKey, attrs))
	return answer(key, d.Value, false, d.EvaluationDetails, err)
}

// BoolFlag evaluates the boolean flag key with no targeting key.
func (f *Flags) BoolFlag(ctx context.Context, key string) transport.FlagAnswer {
	d, err := f.client.BooleanValueDetails(ctx, key, false, openfeature.EvaluationContext{})
	return answer(key, "", d.Value, d.EvaluationDetails, err)
}

// answer is an evaluation's details as the transport reads them; the
// error names the flag and the SDK's error code.
func answer(key, value string, on bool, d openfeature.EvaluationDetails, err error) transport.FlagAnswer {
	a := transport.FlagAnswer{Value: value, On: on, Variant: d.Variant, Reason: string(d.Reason)}
	if err != nil {
		code := d.ErrorCode
		if code == "" {
			code = openfeature.GeneralCode
		}
		a.Err = fmt.Errorf("flag %q: %s: %w", key, code, err)
	}
	return a
}

// changeEvents are the provider events after which an earlier answer may
// be wrong.
var changeEvents = []openfeature.EventType{openfeature.ProviderConfigChange, openfeature.ProviderReady, openfeature.ProviderStale, openfeature.ProviderError}

// OnChange calls changed on each of the client's provider events that may
// change an answer: a configuration change, ready, stale, error. The SDK
// calls it on a goroutine of its own.
func (f *Flags) OnChange(changed func()) (stop func()) {
	cb := func(openfeature.EventDetails) { changed() }
	ref := &cb
	for _, ev := range changeEvents {
		f.client.AddHandler(ev, ref)
	}
	return func() {
		for _, ev := range changeEvents {
			f.client.RemoveHandler(ev, ref)
		}
	}
}
