package telemetry_test

import (
	"reflect"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/fusiongo/transport/internal/meters"
	"github.com/fusiongo/transport/telemetry"
)

// TestNamesAgree: the instrument names and attribute keys that this
// package exports are those that the instruments it creates through
// internal/meters use.
func TestNamesAgree(t *testing.T) {
	names := map[string]string{
		telemetry.MetricConnectionsOpen:        meters.MetricConnectionsOpen,
		telemetry.MetricConnectionsIdle:        meters.MetricConnectionsIdle,
		telemetry.MetricReloads:                meters.MetricReloads,
		telemetry.MetricTransportsKept:         meters.MetricTransportsKept,
		telemetry.MetricTransportsReplaced:     meters.MetricTransportsReplaced,
		telemetry.MetricTransportsRemoved:      meters.MetricTransportsRemoved,
		telemetry.MetricCanaryShare:            meters.MetricCanaryShare,
		telemetry.MetricCanaryFallbacks:        meters.MetricCanaryFallbacks,
		telemetry.MetricBreakerState:           meters.MetricBreakerState,
		telemetry.MetricBreakerTransitions:     meters.MetricBreakerTransitions,
		telemetry.MetricRetryBudgetExhaustions: meters.MetricRetryBudgetExhaustions,
		telemetry.MetricHedgesSent:             meters.MetricHedgesSent,
		telemetry.MetricHedgesWon:              meters.MetricHedgesWon,
		telemetry.MetricAddresses:              meters.MetricAddresses,
		telemetry.MetricAddressConnections:     meters.MetricAddressConnections,
		telemetry.MetricAddressInFlight:        meters.MetricAddressInFlight,
		telemetry.MetricAddressEjected:         meters.MetricAddressEjected,
		telemetry.MetricEjections:              meters.MetricEjections,
		telemetry.MetricCompressedRequests:     meters.MetricCompressedRequests,
		telemetry.MetricCompressionBytesSaved:  meters.MetricCompressionBytesSaved,
		telemetry.MetricRateLimited:            meters.MetricRateLimited,
		telemetry.MetricShadowComparisons:      meters.MetricShadowComparisons,
		telemetry.MetricShadowMismatches:       meters.MetricShadowMismatches,
		telemetry.MetricShadowDropped:          meters.MetricShadowDropped,
	}
	if len(names) != 24 {
		t.Errorf("%d distinct names, want 24: two constants share a name", len(names))
	}
	for exported, internal := range names {
		if exported != internal {
			t.Errorf("telemetry exports %q, the instrument is %q", exported, internal)
		}
	}
	keys := [][2]attribute.Key{
		{telemetry.AttrSourceSchema, meters.AttrSourceSchema},
		{telemetry.AttrPath, meters.AttrPath},
		{telemetry.AttrBreakerState, meters.AttrBreakerState},
		{telemetry.AttrAddress, meters.AttrAddress},
		{telemetry.AttrShadowEqual, meters.AttrShadowEqual},
		{telemetry.AttrShadowKind, meters.AttrShadowKind},
		{telemetry.AttrShadowReason, meters.AttrShadowReason},
	}
	for _, k := range keys {
		if k[0] != k[1] {
			t.Errorf("telemetry exports key %q, the measurements use %q", k[0], k[1])
		}
	}
}

// TestOpaqueHandle: a *Telemetry offers its users Middleware and nothing
// else; the transport reaches its instruments through meters.Of, which
// knows no other type.
func TestOpaqueHandle(t *testing.T) {
	typ := reflect.TypeFor[*telemetry.Telemetry]()
	var methods []string
	for m := range typ.Methods() {
		methods = append(methods, m.Name)
	}
	if len(methods) != 1 || methods[0] != "Middleware" {
		t.Errorf("*telemetry.Telemetry has methods %v, want only Middleware", methods)
	}
	r := newRig(t)
	if meters.Of(r.tel) == nil {
		t.Error("meters.Of(a Telemetry from New) = nil")
	}
	var nilTel *telemetry.Telemetry
	if meters.Of(nilTel) != nil || meters.Of(nil) != nil || meters.Of("not a Telemetry") != nil {
		t.Error("meters.Of of a nil or foreign value is not nil")
	}
}
