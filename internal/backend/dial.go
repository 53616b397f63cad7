package backend

import (
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/setting"
	"golang.org/x/net/http/httpproxy"
)

// ProxyFromEnvironment reads HTTP_PROXY, HTTPS_PROXY and NO_PROXY (or their
// lower-case forms) once, now, as http.ProxyFromEnvironment does, through
// lookup so that tests need not change the process environment. Like Go's,
// it never proxies requests to localhost or loopback addresses, and under
// CGI (REQUEST_METHOD set) it refuses HTTP_PROXY, which a client of the
// CGI program can set with a Proxy header (httpoxy, CVE-2016-5385): an
// http request then fails with an error that says so, as with Go's own.
// Both paths read the environment's proxy only through here.
func ProxyFromEnvironment(lookup func(string) (string, bool)) func(*http.Request) (*url.URL, error) {
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

// Dialer returns the dialer of s: connect_timeout and keep_alive mapped
// onto net.Dialer (where a negative KeepAlive turns probes off).
func Dialer(s env.Settings) *net.Dialer {
	keepAlive := setting.Bound(s.KeepAlive)
	if s.KeepAlive < 0 {
		keepAlive = -1
	}
	return &net.Dialer{Timeout: setting.Bound(s.ConnectTimeout), KeepAlive: keepAlive}
}

// HostPort returns u's host with its port, the scheme's default if none,
// the host in lower case: the address a request to u goes to.
func HostPort(u *url.URL) string {
	host := strings.ToLower(u.Hostname()) // returns its argument unchanged, unallocated, when already lower case
	if p := u.Port(); p != "" {
		return net.JoinHostPort(host, p)
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(host, "443")
	}
	return net.JoinHostPort(host, "80")
}

// SameTarget reports whether a and b go to the same scheme, host and port,
// compared as URLs are: scheme and host without case, the scheme's default
// port filled in. It allocates nothing.
func SameTarget(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}
