package telemetry_test

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/fusiongo/transport/internal/meters"
	"github.com/fusiongo/transport/telemetry"
)

// TestNamesDocumented: the package documentation's metrics table lists
// every instrument name that this package exports, each once, and the
// names are distinct; so are the attribute keys, which the documentation
// names too. The names that internal/meters declares are this package's
// by reference, so no copy can drift; the table is the copy users read.
func TestNamesDocumented(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var table []string // the first column of the metrics table
	for line := range strings.Lines(string(src)) {
		fields := strings.Fields(strings.TrimPrefix(line, "//"))
		// A row: the name, then the instrument (Int64Counter, ...).
		if len(fields) >= 3 && (strings.HasPrefix(fields[1], "Int64") || strings.HasPrefix(fields[1], "Float64")) {
			table = append(table, fields[0])
		}
	}
	names := []string{
		telemetry.MetricRequestDuration, telemetry.MetricRequests, telemetry.MetricErrors, telemetry.MetricRequestsInFlight,
		telemetry.MetricConnectionsOpen, telemetry.MetricConnectionsIdle, telemetry.MetricReloads,
		telemetry.MetricTransportsKept, telemetry.MetricTransportsReplaced, telemetry.MetricTransportsRemoved,
		telemetry.MetricCanaryShare, telemetry.MetricCanaryFallbacks,
		telemetry.MetricBreakerState, telemetry.MetricBreakerTransitions, telemetry.MetricRetryBudgetExhaustions,
		telemetry.MetricHedgesSent, telemetry.MetricHedgesWon,
		telemetry.MetricAddresses, telemetry.MetricAddressConnections, telemetry.MetricAddressInFlight,
		telemetry.MetricAddressEjected, telemetry.MetricEjections,
		telemetry.MetricCompressedRequests, telemetry.MetricCompressionBytesSaved, telemetry.MetricRateLimited,
		telemetry.MetricRateLimitStoreErrors, telemetry.MetricRateLimitFallbacks, telemetry.MetricRateLimitReturns,
		telemetry.MetricShadowComparisons, telemetry.MetricShadowMismatches, telemetry.MetricShadowDropped,
		telemetry.MetricCacheEvents, telemetry.MetricPersistedQueryResends,
		telemetry.MetricRolloutFallbacks,
	}
	slices.Sort(table)
	sorted := slices.Sorted(slices.Values(names))
	if !slices.Equal(table, sorted) {
		t.Errorf("the documentation's table lists\n\t%v\nthe package exports\n\t%v", table, sorted)
	}
	if len(slices.Compact(sorted)) != len(names) {
		t.Errorf("two instruments share a name: %v", names)
	}
	keys := []attribute.Key{
		telemetry.AttrSourceSchema, telemetry.AttrPath, telemetry.AttrBreakerState, telemetry.AttrAddress,
		telemetry.AttrShadowEqual, telemetry.AttrShadowKind, telemetry.AttrShadowReason,
		telemetry.AttrCacheStatus, telemetry.AttrCacheReason, telemetry.AttrPersistedQueryReason, telemetry.AttrRolloutReason,
	}
	for _, k := range keys {
		if !strings.Contains(string(src), string(k)) {
			t.Errorf("the documentation does not name the attribute %s", k)
		}
	}
	if len(slices.Compact(slices.Sorted(slices.Values(keys)))) != len(keys) {
		t.Errorf("two attribute constants share a key: %v", keys)
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
