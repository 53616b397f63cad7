package env

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// Validate reports every problem of c, each naming its key path and value:
// an unknown path, a source schema without a usable URL, a header name that
// is not a valid token, a negative limit. A valid Config can be passed to
// transport.New and Invoker.Reload.
func (c Config) Validate() error {
	var errs errorList
	switch c.Transport {
	case "", PathLegacy, PathSockets:
	default:
		errs.add("transport", string(c.Transport), nil, "invalid value %q: want legacy or sockets", c.Transport)
	}
	headerNames(&errs, "forward_headers", c.ForwardHeaders)
	validateSettings(&errs, "defaults", c.Defaults)
	names := make([]string, 0, len(c.SourceSchemas))
	for name := range c.SourceSchemas {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		s := c.SourceSchemas[name]
		key := "source_schemas." + name
		if strings.TrimSpace(name) == "" {
			errs.add("source_schemas", name, nil, "a source schema needs a name")
		}
		if err := checkURL(s.URL); err != nil {
			errs.add(key+".url", s.URL, err, "%v", err)
		}
		headerNames(&errs, key+".forward_headers", s.ForwardHeaders)
		validateSettings(&errs, key, s.Settings)
	}
	return errs.err()
}

func validateSettings(errs *errorList, prefix string, s Settings) {
	if s.MaxConnsPerHost < NoLimit {
		errs.add(prefix+".max_conns_per_host", s.MaxConnsPerHost, nil, "invalid limit %d: must not be negative (0 means no limit)", s.MaxConnsPerHost)
	}
}

// checkURL requires an absolute http or https URL.
func checkURL(raw string) error {
	if raw == "" {
		return fmt.Errorf("missing url: every source schema needs its GraphQL endpoint, for example http://127.0.0.1:4001/graphql")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("invalid url %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("invalid url %q: want scheme http or https", raw)
	}
	if u.Host == "" {
		return fmt.Errorf("invalid url %q: no host", raw)
	}
	return nil
}

func headerNames(errs *errorList, key string, names []string) {
	for i, n := range names {
		if !httpguts.ValidHeaderFieldName(n) {
			errs.add(fmt.Sprintf("%s[%d]", key, i), n, nil, "invalid header name %q", n)
		}
	}
}
