package legacy

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// The legacy path's http.Client runs the schema's whole pipeline on every
// redirect hop, so a middleware that adds a credential (middleware.Token,
// a session cookie) adds it again on a hop where net/http has just dropped
// the caller's own. The client's redirect policy (checkRedirect) marks
// each hop that net/http would send no credentials to, and the innermost
// middleware (withhold) takes them off such a hop after every other
// middleware has run.

// maxRedirects is net/http's default policy: the 11th hop is refused.
const maxRedirects = 10

// errTooManyRedirects is the error of the default policy, word for word.
var errTooManyRedirects = errors.New("stopped after 10 redirects")

// offOrigin is the context key of a redirect hop that goes where
// net/http's Client would send no credentials; its value is true.
type offOrigin struct{}

// checkRedirect is the schema client's redirect policy: net/http's default
// (up to 10 redirects), and it marks req, the next hop, when it or a hop
// before it went to a host that net/http sends no credentials to. It
// decides from the client's own record of the chain (via), which no
// middleware can change.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return errTooManyRedirects
	}
	initial := via[0].URL
	off := leftOrigin(initial, req.URL)
	for _, hop := range via[1:] {
		off = off || leftOrigin(initial, hop.URL)
	}
	if off {
		// The client sends req itself once the policy returns: the mark
		// must be on it, and a request's context is set only by copying.
		*req = *req.WithContext(context.WithValue(req.Context(), offOrigin{}, true))
	}
	return nil
}

// leftOrigin reports whether net/http's Client, following a redirect
// chain that started at initial, drops the credentials of the hop to dest
// (client.go: the host differs and shouldCopyHeaderOnRedirect is false:
// dest's host name is neither initial's nor a subdomain of it, ports
// aside).
func leftOrigin(initial, dest *url.URL) bool {
	if initial.Host == dest.Host {
		return false
	}
	return !isDomainOrSubdomain(asciiHost(dest), asciiHost(initial))
}

// asciiHost is u's host name as net/http compares it (idnaASCIIFromURL):
// an ASCII name as it is, another in its IDNA form if it has one.
func asciiHost(u *url.URL) string {
	h := u.Hostname()
	if a, err := idnaASCII(h); err == nil {
		return a
	}
	return h
}

// isDomainOrSubdomain is net/http's: sub equals parent or ends in
// "."+parent; an address with a colon or a zone is only equal to itself.
func isDomainOrSubdomain(sub, parent string) bool {
	if sub == parent {
		return true
	}
	if strings.ContainsAny(sub, ":%") {
		return false
	}
	return strings.HasSuffix(sub, parent) && len(sub) > len(parent) && sub[len(sub)-len(parent)-1] == '.'
}

// credential reports whether a header is one net/http's Client drops on a
// redirect to another host (makeHeadersCopier).
func credential(name string) bool {
	for _, c := range [...]string{"Authorization", "Www-Authenticate", "Cookie", "Cookie2", "Proxy-Authorization", "Proxy-Authenticate"} {
		if strings.EqualFold(name, c) {
			return true
		}
	}
	return false
}

// withhold is the legacy backend's middleware, the innermost of each
// schema's pipeline: on a hop that checkRedirect marked it sends a copy of
// the request without the credential headers, whichever middleware set
// them and in whatever case.
func withhold(next http.RoundTripper) http.RoundTripper { return withholder{next} }

type withholder struct{ next http.RoundTripper }

func (w withholder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Context().Value(offOrigin{}) == nil {
		return w.next.RoundTrip(req)
	}
	var h http.Header
	for name := range req.Header {
		if credential(name) {
			if h == nil {
				h = req.Header.Clone()
			}
			delete(h, name)
		}
	}
	if h != nil {
		out := *req
		out.Header = h
		req = &out
	}
	return w.next.RoundTrip(req)
}
