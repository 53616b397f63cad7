// Package headers holds the header forwarding rules that both paths call:
// which gateway request headers reach a source schema, and which never do.
package headers

import (
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"strings"
)

// hopByHop lists the headers that describe one connection, not the message,
// so a proxy must not pass them on (RFC 9110, section 7.6.1). Headers named
// in the Connection header are hop-by-hop as well; Forward drops those per
// request.
var hopByHop = []string{
	"Connection",
	"Keep-Alive",
	"Proxy-Authenticate",
	"Proxy-Authorization",
	"Proxy-Connection", // non-standard, still sent by old clients (RFC 7230 A.1.2)
	"Te",               // canonical form of "TE"
	"Trailer",
	"Transfer-Encoding",
	"Upgrade",
}

// IsHopByHop reports whether name is a hop-by-hop header, or Host, which a
// source schema request gets from its own URL. Any Proxy-* header counts:
// those are between a client and its proxy, never for a source schema.
func IsHopByHop(name string) bool {
	name = textproto.CanonicalMIMEHeaderKey(name)
	if name == "Host" || strings.HasPrefix(name, "Proxy-") {
		return true
	}
	for _, h := range hopByHop {
		if name == h {
			return true
		}
	}
	return false
}

// ErrInvalidValue is wrapped by Forward's error for a header value holding
// CR, LF or NUL, which could split a request if it were ever written raw.
var ErrInvalidValue = errors.New("header value contains CR, LF or NUL")

// Rules is a compiled list of gateway request headers to forward. The zero
// value forwards nothing. A Rules is safe for concurrent use.
type Rules struct {
	names []string // canonical, unique, without hop-by-hop names and Host
}

// Compile merges lists of header names into Rules: names are canonicalised
// and deduplicated, and hop-by-hop names and Host are dropped whatever the
// lists say.
func Compile(lists ...[]string) Rules {
	var r Rules
	for _, list := range lists {
		for _, n := range list {
			n = textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(n))
			if n == "" || IsHopByHop(n) || contains(r.names, n) {
				continue
			}
			r.names = append(r.names, n)
		}
	}
	return r
}

// Names returns the forwarded header names, canonical, in list order.
func (r Rules) Names() []string { return append([]string(nil), r.names...) }

// Len returns the number of forwarded header names.
func (r Rules) Len() int { return len(r.names) }

// Empty reports whether r forwards nothing.
func (r Rules) Empty() bool { return len(r.names) == 0 }

// Apply returns the headers for a source schema request: dst with the
// gateway's listed headers added. A header dst already has wins. A header
// the gateway request's Connection header names is not forwarded. dst is
// cloned before the first change unless owned is true, so a caller's request
// is never modified. A value with CR, LF or NUL fails with an error naming
// the header and wrapping ErrInvalidValue; nothing is forwarded then.
func (r Rules) Apply(dst, gateway http.Header, owned bool) (http.Header, error) {
	if len(r.names) == 0 || len(gateway) == 0 {
		return dst, nil
	}
	var connection []string
	if c := gateway["Connection"]; len(c) > 0 {
		connection = c
	}
	out := dst
	for _, name := range r.names {
		values := gateway[name]
		if len(values) == 0 {
			continue
		}
		if _, ok := dst[name]; ok {
			continue
		}
		if connection != nil && listed(connection, name) {
			continue
		}
		for _, v := range values {
			if strings.ContainsAny(v, "\r\n\x00") {
				return dst, fmt.Errorf("forwarding gateway header %s: %w", name, ErrInvalidValue)
			}
		}
		if !owned {
			out = dst.Clone()
			if out == nil {
				out = make(http.Header, len(r.names))
			}
			owned = true
		}
		out[name] = values
	}
	return out, nil
}

// listed reports whether the Connection header values name header.
func listed(connection []string, name string) bool {
	for _, v := range connection {
		for token := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(token), name) {
				return true
			}
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
