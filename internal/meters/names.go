package meters

// The names of the instruments of a Set, declared here once: package
// telemetry exports each under the same name (telemetry.MetricReloads is
// MetricReloads), and its documentation lists them.
const (
	MetricConnectionsOpen    = "fusion.transport.connections.open"
	MetricConnectionsIdle    = "fusion.transport.connections.idle"
	MetricReloads            = "fusion.transport.reloads"
	MetricTransportsKept     = "fusion.transport.transports.kept"
	MetricTransportsReplaced = "fusion.transport.transports.replaced"
	MetricTransportsRemoved  = "fusion.transport.transports.removed"

	MetricCanaryShare     = "fusion.transport.canary.share"
	MetricCanaryFallbacks = "fusion.transport.canary.fallbacks"

	MetricBreakerState           = "fusion.transport.breaker.state"
	MetricBreakerTransitions     = "fusion.transport.breaker.transitions"
	MetricRetryBudgetExhaustions = "fusion.transport.retry.budget_exhausted"
	MetricHedgesSent             = "fusion.transport.hedges.sent"
	MetricHedgesWon              = "fusion.transport.hedges.won"

	MetricAddresses          = "fusion.transport.addresses"
	MetricAddressConnections = "fusion.transport.address.connections"
	MetricAddressInFlight    = "fusion.transport.address.in_flight"
	MetricAddressEjected     = "fusion.transport.address.ejected"
	MetricEjections          = "fusion.transport.outlier.ejections"

	MetricCompressedRequests    = "fusion.transport.request_compression.requests"
	MetricCompressionBytesSaved = "fusion.transport.request_compression.bytes_saved"
	MetricRateLimited           = "fusion.transport.rate_limit.limited"
	MetricRateLimitStoreErrors  = "fusion.transport.rate_limit.store_errors"
	MetricRateLimitFallbacks    = "fusion.transport.rate_limit.fallbacks"
	MetricRateLimitReturns      = "fusion.transport.rate_limit.returns"

	MetricShadowComparisons = "fusion.transport.shadow.comparisons"
	MetricShadowMismatches  = "fusion.transport.shadow.mismatches"
	MetricShadowDropped     = "fusion.transport.shadow.dropped"

	MetricRolloutFallbacks = "fusion.transport.rollout.fallbacks"

	MetricCacheEvents = "fusion.transport.cache.events"

	MetricPersistedQueryResends = "fusion.transport.persisted_queries.resends"
)
