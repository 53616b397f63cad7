package legacy

import (
	"net/http"
	"net/url"

	"golang.org/x/net/http/httpproxy"
)

// propagator is the header propagation middleware of the shared client and
// the first handler of its pipeline, as ASP.NET Core's AddHeaderPropagation
// and Go gateways' header middlewares are: it adds the configured gateway
// request headers to each request that passes through, by the shared rules
// of internal/headers. After it come the source schema's middleware and the
// shared transport (next, for a request that carries no source schema).
type propagator struct {
	next http.RoundTripper
}

func (p *propagator) RoundTrip(req *http.Request) (*http.Response, error) {
	s, _ := req.Context().Value(schemaKey{}).(*schema)
	if s == nil {
		return p.next.RoundTrip(req)
	}
	if s.rules.Empty() || !sameOrigin(req) {
		return s.rt.RoundTrip(req)
	}
	h, err := s.rules.Apply(req.Context(), req.Header, false)
	if err != nil {
		if req.Body != nil {
			req.Body.Close() // a RoundTripper closes the body, even on errors
		}
		return nil, err
	}
	if len(h) != len(req.Header) {
		// Apply cloned the headers; a RoundTripper must not modify the
		// caller's request, so send a shallow copy.
		r2 := new(http.Request)
		*r2 = *req
		r2.Header = h
		req = r2
	}
	return s.rt.RoundTrip(req)
}

// sameOrigin reports whether req goes to the host of the first request of
// its redirect chain. Gateway headers are not propagated to another host,
// as http.Client drops sensitive headers on such a redirect.
func sameOrigin(req *http.Request) bool {
	first := req
	for first.Response != nil && first.Response.Request != nil {
		first = first.Response.Request
	}
	return first == req || first.URL.Host == req.URL.Host
}

// proxyFromEnv reads HTTP_PROXY, HTTPS_PROXY and NO_PROXY (or their
// lower-case forms) once, as http.ProxyFromEnvironment does, through an
// injectable lookup so that tests need not change the process environment.
// Like Go's, it never proxies requests to localhost or loopback addresses.
func proxyFromEnv(lookup func(string) (string, bool)) func(*http.Request) (*url.URL, error) {
	get := func(keys ...string) string {
		for _, k := range keys {
			if v, ok := lookup(k); ok && v != "" {
				return v
			}
		}
		return ""
	}
	cfg := &httpproxy.Config{
		HTTPProxy:  get("HTTP_PROXY", "http_proxy"),
		HTTPSProxy: get("HTTPS_PROXY", "https_proxy"),
		NoProxy:    get("NO_PROXY", "no_proxy"),
		CGI:        get("REQUEST_METHOD") != "",
	}
	f := cfg.ProxyFunc()
	return func(req *http.Request) (*url.URL, error) { return f(req.URL) }
}
