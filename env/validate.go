package env

import (
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/fusiongo/transport/internal/redact"
	"golang.org/x/net/http/httpguts"
)

// Validate reports every problem of c, each naming its key path and value:
// an unknown path, a source schema without a usable URL, a header name that
// is not a valid token, a negative limit. Secrets are hidden: a URL's,
// proxy's or redis.url's password shows as xxxxx, a headers.set value and
// the response cache's invalidation token as [redacted]. A
// valid Config can be passed to transport.New and Invoker.Reload.
func (c Config) Validate() error {
	var errs errorList
	switch c.Path {
	case "", PathLegacy, PathSockets:
		if len(c.SocketsSchemas) > 0 {
			errs.add("transport", strings.Join(c.SocketsSchemas, ","), nil, "a list of source schemas on sockets needs transport %q, not %q", PathMixed, c.EffectivePath())
		}
	case PathMixed:
		if len(c.SocketsSchemas) == 0 {
			errs.add("transport", string(c.Path), nil, "no source schemas named for the sockets path")
		}
		for _, n := range c.SocketsSchemas {
			if _, ok := c.SourceSchemas[n]; !ok {
				configured := strings.Join(sortedSchemaNames(c.SourceSchemas), ", ")
				if configured == "" {
					configured = "none"
				}
				errs.add("transport", n, nil, "unknown source schema %q in the sockets list (configured: %s)", n, configured)
			}
		}
	default:
		errs.add("transport", string(c.Path), nil, "invalid value %q: want legacy, sockets or mixed", c.Path)
	}
	switch {
	case c.Shadow.Rate < 0 || c.Shadow.Rate > 1:
		errs.add("shadow.rate", c.Shadow.Rate, nil, "invalid rate %v: want a number from 0 (off) to 1 (every query)", c.Shadow.Rate)
	case c.Shadow.Rate > 0 && c.EffectivePath() != PathLegacy:
		errs.add("shadow.rate", c.Shadow.Rate, nil, "shadow comparison needs the legacy path serving; transport is %q", c.EffectivePath())
	}
	validateCanary(&errs, c)
	validateRedis(&errs, c) // cache.go
	headerNames(&errs, "forward_headers", c.ForwardHeaders)
	validateSettings(&errs, "defaults", c.Defaults)
	validateCacheStore(&errs, "defaults", c.Defaults, c.EffectiveDefaults(), c.Redis.URL)
	validateLimitStore(&errs, "defaults", c.Defaults, c.EffectiveDefaults(), c.Redis.URL)
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
		eff, _ := c.Effective(name)
		validateCacheStore(&errs, key, s.Settings, eff, c.Redis.URL)
		validateLimitStore(&errs, key, s.Settings, eff, c.Redis.URL)
		if u, err := url.Parse(s.URL); err == nil && checkURL(s.URL) == nil {
			validateEffective(&errs, key, u, eff)
		}
	}
	return errs.err()
}

// validateSettings checks the values set at one level, naming their keys.
func validateSettings(errs *errorList, prefix string, s Settings) {
	for _, l := range []struct {
		key string
		n   int
	}{{"max_conns_per_host", s.MaxConnsPerHost}, {"max_idle_conns_per_host", s.MaxIdleConnsPerHost}, {"max_pending_requests", s.MaxPendingRequests}, {"max_response_header_bytes", s.MaxResponseHeaderBytes}, {"headers.max_forwarded_bytes", s.Headers.MaxForwardedBytes}} {
		if l.n < NoLimit {
			errs.add(prefix+"."+l.key, l.n, nil, "invalid limit %d: must not be negative (0 means %s)", l.n, zeroLimit(l.key))
		}
	}
	if s.UnixSocket != "" {
		if err := checkUnixSocket(s.UnixSocket); err != nil {
			errs.add(prefix+".unix_socket", s.UnixSocket, err, "%v", err)
		}
	}
	if s.Retry.MaxAttempts < 0 {
		errs.add(prefix+".retry.max_attempts", s.Retry.MaxAttempts, nil, "invalid value %d: want a whole number of tries, at least 1 (1 does not retry)", s.Retry.MaxAttempts)
	}
	for _, c := range []struct {
		key, v  string
		allowed []string
	}{
		{"engine", s.Engine, engines},
		{"http_version", s.HTTPVersion, []string{"1.1", "2", "h2c"}},
		{"version_policy", s.VersionPolicy, []string{"exact", "or_lower"}},
		{"tls.min_version", s.TLS.MinVersion, []string{"1.2", "1.3"}},
		{"tls.max_version", s.TLS.MaxVersion, []string{"1.2", "1.3"}},
	} {
		if c.v != "" && !contains(c.allowed, c.v) {
			errs.add(prefix+"."+c.key, c.v, nil, "invalid value %q: allowed %s", c.v, strings.Join(c.allowed, ", "))
		}
	}
	if s.Proxy != "" {
		if err := checkProxy(s.Proxy); err != nil {
			errs.add(prefix+".proxy", s.Proxy, err, "%v", err)
		}
	}
	for i, c := range s.Decompression {
		if c != CodecGzip && c != CodecZstd {
			errs.add(fmt.Sprintf("%s.decompression[%d]", prefix, i), c, nil, "invalid value %q: allowed %s, %s", c, CodecGzip, CodecZstd)
		}
	}
	headerNames(errs, prefix+".headers.forward", s.Headers.Forward)
	validateResilience(errs, prefix, s) // resilience.go
	validateShaping(errs, prefix, s)    // shaping.go
	validateCache(errs, prefix, s)      // cache.go
	validatePersisted(errs, prefix, s)  // persisted.go
	for i, expr := range s.Headers.ForwardMatching {
		if _, err := regexp.Compile(expr); err != nil {
			errs.add(fmt.Sprintf("%s.headers.forward_matching[%d]", prefix, i), expr, err, "invalid regular expression %q: %v", expr, err)
		}
	}
	for _, from := range sortedStrings(s.Headers.Rename) {
		to := s.Headers.Rename[from]
		for _, n := range []string{from, to} {
			if !httpguts.ValidHeaderFieldName(n) {
				errs.add(prefix+".headers.rename."+from, to, nil, "invalid header name %q", n)
			}
		}
	}
	for _, name := range sortedStrings(s.Headers.Set) {
		v := s.Headers.Set[name]
		if !httpguts.ValidHeaderFieldName(name) {
			errs.add(prefix+".headers.set."+name, v, nil, "invalid header name %q", name)
		}
		if !httpguts.ValidHeaderFieldValue(v) {
			// The value is the secret a static header carries: the
			// reason names the header and what is wrong, never the value.
			errs.add(prefix+".headers.set."+name, v, nil, "invalid header value %s: control characters such as CR or LF are not allowed", redact.Value)
		}
	}
}

// validateEffective checks a source schema's settings after inheritance:
// combinations that no single key shows.
func validateEffective(errs *errorList, key string, u *url.URL, s Settings) {
	switch {
	case s.HTTPVersion == "h2c" && u.Scheme != "http":
		errs.add(key+".http_version", s.HTTPVersion, nil, "invalid value \"h2c\" for url %s: h2c is cleartext HTTP/2 and needs an http url (use \"2\" over https)", u.Redacted())
	case s.HTTPVersion == "2" && s.VersionPolicy == "exact" && u.Scheme != "https":
		errs.add(key+".http_version", s.HTTPVersion, nil, "invalid value \"2\" with version_policy exact for url %s: HTTP/2 over http needs prior knowledge (use \"h2c\")", u.Redacted())
	}
	if (s.TLS.CertFile == "") != (s.TLS.KeyFile == "") {
		errs.add(key+".tls", s.TLS.CertFile+s.TLS.KeyFile, nil, "tls.cert_file and tls.key_file go together: set both or neither")
	}
	if s.TLS.MinVersion != "" && s.TLS.MaxVersion != "" && s.TLS.MinVersion > s.TLS.MaxVersion {
		errs.add(key+".tls.min_version", s.TLS.MinVersion, nil, "invalid value %q: above tls.max_version %q", s.TLS.MinVersion, s.TLS.MaxVersion)
	}
	if s.Retry.WaitMin > 0 && s.Retry.WaitMax > 0 && s.Retry.WaitMin > s.Retry.WaitMax {
		errs.add(key+".retry.wait_min", s.Retry.WaitMin.String(), nil, "invalid value %s: above retry.wait_max %s", s.Retry.WaitMin, s.Retry.WaitMax)
	}
}

// checkProxy accepts off, environment, or an absolute proxy URL. Its
// errors show the URL with its password hidden (redact.URL).
func checkProxy(v string) error {
	switch strings.ToLower(v) {
	case "off", "environment":
		return nil
	}
	shown := redact.URL(v)
	u, err := redact.Parse(v)
	if err != nil {
		return fmt.Errorf("invalid proxy %q: %w", shown, err)
	}
	switch u.Scheme {
	case "http", "https", "socks5", "socks5h":
	default:
		return fmt.Errorf("invalid proxy %q: want off, environment, or a URL with scheme http, https or socks5", shown)
	}
	if u.Host == "" {
		return fmt.Errorf("invalid proxy %q: no host", shown)
	}
	return nil
}

func sortedSchemaNames(m map[string]SourceSchema) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func sortedStrings(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// checkURL requires an absolute http or https URL. Its errors show the URL
// with its password hidden (redact.URL).
func checkURL(raw string) error {
	if raw == "" {
		return fmt.Errorf("missing url: every source schema needs its GraphQL endpoint, for example http://127.0.0.1:4001/graphql")
	}
	shown := redact.URL(raw)
	u, err := redact.Parse(raw)
	if err != nil {
		return fmt.Errorf("invalid url %q: %w", shown, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("invalid url %q: want scheme http or https", shown)
	}
	return checkHostPort(shown, u)
}

// checkHostPort requires u, shown as shown, to have a host that is valid
// UTF-8 without spaces or control characters, and a port from 1 to 65535
// if it has one.
func checkHostPort(shown string, u *url.URL) error {
	if u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("invalid url %q: no host", shown)
	}
	if h := u.Hostname(); !utf8.ValidString(h) || strings.ContainsFunc(h, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return fmt.Errorf("invalid url %q: host %q is not valid UTF-8 or holds spaces or control characters", shown, h)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("invalid url %q: port %s is not between 1 and 65535", shown, p)
		}
	}
	return nil
}

// maxUnixSocketPath is the longest socket path Linux takes (sun_path holds
// 108 bytes with the terminating NUL).
const maxUnixSocketPath = 107

// checkUnixSocket rejects a socket path that no dial could use.
func checkUnixSocket(p string) error {
	switch {
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("invalid unix_socket %q: holds a NUL byte", p)
	case len(p) > maxUnixSocketPath:
		return fmt.Errorf("invalid unix_socket %q: %d bytes, the most a socket path can have is %d", p, len(p), maxUnixSocketPath)
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
