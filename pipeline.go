package transport

import (
	"net/http"

	"github.com/fusiongo/transport/middleware"
)

// stage is one layer of a route's pipeline. The constants are declared in
// the order a request passes the layers, outermost first, and that
// declaration is the order: layers.chain stacks the middleware by walking
// the stages in it, and docs/design.md's "Pipeline" section lists them by
// name (stageNames; pipeline_doc_test.go compares the two).
type stage int

const (
	// stageHeaderRules: the header rules and the header and request
	// bounds, applied before the chain is entered (route.do, route.postOn;
	// on legacy, the http.Client front, on each hop to the first host).
	stageHeaderRules       stage = iota
	stageTelemetry               // WithTelemetry
	stageRequestLog              // WithRequestLog
	stageMiddleware              // WithMiddleware
	stageSchemaMiddleware        // SchemaOptions.Middleware
	stageCache                   // response_cache
	stageDedupe                  // dedupe
	stagePersistedQueries        // persisted_queries
	stageCompress                // request_compression
	stageRetry                   // retry
	stageHedge                   // hedge
	stageBreaker                 // circuit_breaker
	stageRateLimit               // rate_limit
	stageAttemptMiddleware       // SchemaOptions.AttemptMiddleware
	stageBackendMiddleware       // backend.Backend.Middleware (sockets: decompression; legacy: credentials off a redirect hop to another host)
	// stageTransport: the chain's innermost RoundTripper, sender, which
	// sends on the route's transport (or SchemaOptions.RoundTripper).
	stageTransport
	numStages
)

// The header rules are applied before the chain and sender is its
// innermost RoundTripper: these fail to compile if another stage is
// declared before the first or after the last.
var (
	_ = [1]struct{}{}[stageHeaderRules]
	_ = [1]struct{}{}[numStages-1-stageTransport]
)

// stageNames are the stages' names as docs/design.md lists them.
var stageNames = [numStages]string{
	stageHeaderRules:       "header rules",
	stageTelemetry:         "telemetry",
	stageRequestLog:        "request log",
	stageMiddleware:        "WithMiddleware",
	stageSchemaMiddleware:  "SchemaOptions.Middleware",
	stageCache:             "response_cache",
	stageDedupe:            "dedupe",
	stagePersistedQueries:  "persisted_queries",
	stageCompress:          "request_compression",
	stageRetry:             "retry",
	stageHedge:             "hedge",
	stageBreaker:           "circuit_breaker",
	stageRateLimit:         "rate_limit",
	stageAttemptMiddleware: "SchemaOptions.AttemptMiddleware",
	stageBackendMiddleware: "backend middleware",
	stageTransport:         "transport",
}

// pipelineOrder returns the stages' names, outermost first: the order
// layers.chain builds.
func pipelineOrder() []string {
	out := make([]string, 0, numStages)
	for s := range numStages {
		out = append(out, stageNames[s])
	}
	return out
}

// layers are the middleware of a route's pipeline, by stage.
type layers [numStages][]middleware.Middleware

// add appends the non-nil entries of mws to stage s, the first outermost.
func (l *layers) add(s stage, mws ...middleware.Middleware) {
	for _, m := range mws {
		if m != nil {
			l[s] = append(l[s], m)
		}
	}
}

// empty reports whether every stage of ss has no middleware.
func (l *layers) empty(ss ...stage) bool {
	for _, s := range ss {
		if len(l[s]) > 0 {
			return false
		}
	}
	return true
}

// chain returns innermost wrapped in the middleware of every stage, in
// the stages' order.
func (l *layers) chain(innermost http.RoundTripper) http.RoundTripper {
	var mws []middleware.Middleware
	for s := range numStages {
		mws = append(mws, l[s]...)
	}
	return middleware.Chain(innermost, mws...)
}
