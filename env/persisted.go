package env

import (
	"strings"

	"github.com/fusiongo/transport/internal/defaults"
)

// PersistedQueriesSettings configure automatic persisted queries (APQ) to
// a source schema (middleware.PersistedQueries): a GraphQL request goes
// with the SHA-256 hash of its query text in place of the text, and with
// the text only when the schema asks for it (docs/configuration.md,
// "Automatic persisted queries", has the rules). Every zero field
// inherits.
type PersistedQueriesSettings struct {
	// Mode is PersistedQueriesOff or PersistedQueriesAPQ; "" inherits.
	// Default: PersistedQueriesOff.
	Mode string

	// GET sends a query (never a mutation or a subscription) by its hash
	// as a GET, with operationName, variables and the hash in the URL,
	// when the URL is at most MaxURLBytes long, so that an HTTP cache
	// between the gateway and the schema can answer it; a longer one goes
	// by POST. Read with Mode PersistedQueriesAPQ only. Default: Disabled.
	GET Toggle

	// MaxURLBytes bounds the URL of a query sent as GET: scheme, host,
	// path and query string. At least 1. Default: 8192.
	MaxURLBytes int
}

// The values of PersistedQueriesSettings.Mode.
const (
	PersistedQueriesOff = "off"
	PersistedQueriesAPQ = "apq"
)

// persistedModes are the values of PersistedQueriesSettings.Mode.
var persistedModes = []string{PersistedQueriesOff, PersistedQueriesAPQ}

// DefaultPersistedQueryMaxURLBytes is PersistedQueriesSettings.MaxURLBytes's
// default: 8 KiB, middleware's DefaultPersistedQueryMaxURLBytes by the
// same name.
const DefaultPersistedQueryMaxURLBytes = defaults.PersistedQueryMaxURLBytes

// On reports whether s sends requests by their hash.
func (s PersistedQueriesSettings) On() bool { return s.Mode == PersistedQueriesAPQ }

// validatePersisted checks the persisted query values set at one level
// (as Go code may set them; a file's decoding already refuses the same
// values), naming their keys.
func validatePersisted(errs *errorList, prefix string, s Settings) {
	p := s.PersistedQueries
	if p.Mode != "" && !contains(persistedModes, p.Mode) {
		errs.add(prefix+".persisted_queries.mode", p.Mode, nil, "invalid value %q: allowed %s", p.Mode, strings.Join(persistedModes, ", "))
	}
	if p.MaxURLBytes < 0 {
		errs.add(prefix+".persisted_queries.max_url_bytes", p.MaxURLBytes, nil, "invalid value %d: want a whole number, at least 1", p.MaxURLBytes)
	}
}
