// Package headers holds the header forwarding rules that both paths call:
// which gateway request headers reach a source schema, and which never do.
package headers

import (
	"context"
	"fmt"
	"net/http"
	"net/textproto"
	"regexp"
	"slices"
	"strings"

	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/gateway"
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

// exchange lists the headers that change the exchange rather than describe
// the caller: forwarded from a gateway request they would change how the
// source schema answers or how the path talks to it, so no rule forwards,
// renames, sets or computes them, as with hop-by-hop headers.
//   - Expect: 100-continue makes the client wait for an interim answer (a
//     second on the legacy path, for every call);
//   - Accept-Encoding: the path decides about compression; a forwarded one
//     turns off net/http's transparent gzip on the legacy path;
//   - Range, If-Range: a partial (206) answer is not a GraphQL answer;
//   - If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since: a
//     conditional request can turn an answer into 304 or 412;
//   - Content-Length, Content-Type, Content-Encoding, Content-Range: they
//     describe the gateway request's body, not the source schema request's;
//   - Max-Forwards: for TRACE and OPTIONS through proxies.
var exchange = []string{
	"Expect",
	"Accept-Encoding",
	"Range",
	"If-Range",
	"If-Match",
	"If-None-Match",
	"If-Modified-Since",
	"If-Unmodified-Since",
	"Content-Length",
	"Content-Type",
	"Content-Encoding",
	"Content-Range",
	"Max-Forwards",
}

// IsExchange reports whether name is a header that changes the exchange
// (see exchange): the rules never add one.
func IsExchange(name string) bool {
	return slices.Contains(exchange, textproto.CanonicalMIMEHeaderKey(name))
}

// Never reports whether the rules never add header name: hop-by-hop, Host,
// or one that changes the exchange.
func Never(name string) bool { return IsHopByHop(name) || IsExchange(name) }

// IsHopByHop reports whether name is a hop-by-hop header, or Host, which a
// source schema request gets from its own URL. Any Proxy-* header counts:
// those are between a client and its proxy, never for a source schema.
func IsHopByHop(name string) bool {
	name = textproto.CanonicalMIMEHeaderKey(name)
	if name == "Host" || strings.HasPrefix(name, "Proxy-") {
		return true
	}
	return slices.Contains(hopByHop, name)
}

// ValueFunc computes a header value from the gateway request (nil when the
// source schema request was made outside one). It reports false to send no
// header.
type ValueFunc = func(ctx context.Context, gateway *http.Request) (string, bool)

// Spec is what a source schema's header rules are compiled from.
type Spec struct {
	// Forward names gateway request headers to forward.
	Forward []string
	// Matching holds regular expressions; a gateway header whose canonical
	// name matches one is forwarded.
	Matching []string
	// Rename forwards the gateway header named by a key under the name of
	// its value.
	Rename map[string]string
	// Set adds static headers.
	Set map[string]string
	// Values adds headers computed per request.
	Values map[string]ValueFunc
	// MaxBytes bounds the bytes (name, ": ", value, CRLF per value) that the
	// rules add to one request; Apply fails over it, wrapping
	// fault.ErrHeadersTooLarge. Zero or negative: no bound.
	MaxBytes int
}

// Rules are compiled header rules. The zero value forwards nothing. Rules
// are safe for concurrent use.
type Rules struct {
	names    []string // canonical, unique, without hop-by-hop names and Host
	matching []*regexp.Regexp
	rename   []pair // gateway name -> source schema name, canonical
	set      []pair
	values   []valueRule
	maxBytes int // 0: no bound
}

type pair struct{ from, to string }

type valueRule struct {
	name string
	fn   ValueFunc
}

// New compiles spec. Hop-by-hop names and Host are dropped from every rule;
// an invalid regular expression is an error.
func New(spec Spec) (Rules, error) {
	var r Rules
	for _, n := range spec.Forward {
		n = textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(n))
		if n == "" || Never(n) || slices.Contains(r.names, n) {
			continue
		}
		r.names = append(r.names, n)
	}
	for _, expr := range spec.Matching {
		re, err := regexp.Compile(expr)
		if err != nil {
			return Rules{}, fmt.Errorf("header expression %q: %w", expr, err)
		}
		r.matching = append(r.matching, re)
	}
	r.maxBytes = max(spec.MaxBytes, 0)
	for _, from := range sortedKeys(spec.Rename) {
		p := pair{textproto.CanonicalMIMEHeaderKey(from), textproto.CanonicalMIMEHeaderKey(spec.Rename[from])}
		if !Never(p.from) && !Never(p.to) {
			r.rename = append(r.rename, p)
		}
	}
	for _, name := range sortedKeys(spec.Set) {
		p := pair{textproto.CanonicalMIMEHeaderKey(name), spec.Set[name]}
		if !Never(p.from) {
			r.set = append(r.set, p)
		}
	}
	for _, name := range sortedKeys(spec.Values) {
		if n := textproto.CanonicalMIMEHeaderKey(name); !Never(n) && spec.Values[name] != nil {
			r.values = append(r.values, valueRule{n, spec.Values[name]})
		}
	}
	return r, nil
}

// Equal reports whether r and o add the same headers to every request:
// the same names, expressions (by their source), renames, static values,
// computed names and bound. Computed values are compared by name: their
// functions are the Go options', fixed for an invoker's life.
func (r Rules) Equal(o Rules) bool {
	return slices.Equal(r.names, o.names) && r.maxBytes == o.maxBytes &&
		slices.Equal(r.rename, o.rename) && slices.Equal(r.set, o.set) &&
		slices.EqualFunc(r.matching, o.matching, func(a, b *regexp.Regexp) bool { return a.String() == b.String() }) &&
		slices.EqualFunc(r.values, o.values, func(a, b valueRule) bool { return a.name == b.name })
}

// Len returns an estimate of the headers the rules add, for sizing maps.
func (r Rules) Len() int { return len(r.names) + len(r.rename) + len(r.set) + len(r.values) }

// Empty reports whether r adds nothing.
func (r Rules) Empty() bool {
	return len(r.names) == 0 && len(r.matching) == 0 && len(r.rename) == 0 && len(r.set) == 0 && len(r.values) == 0
}

// Apply returns the headers for a source schema request: dst with what the
// rules add from the gateway request that ctx carries — forwarded names,
// names matching an expression, renamed headers, static and computed
// values, in that order. A header dst already has wins, and so does an
// earlier rule. A header the gateway request's Connection header names is
// not forwarded. dst is cloned before the first change unless owned is
// true, so a caller's request is never modified. A value with CR, LF or NUL
// fails with an error naming the header and wrapping
// fault.ErrInvalidHeaderValue, and headers over Spec.MaxBytes with one
// wrapping fault.ErrHeadersTooLarge: package fault's, so that a caller can
// match them whichever path refused; nothing is sent then.
func (r Rules) Apply(ctx context.Context, dst http.Header, owned bool) (http.Header, error) {
	gwReq := gateway.Request(ctx)
	var gw http.Header
	if gwReq != nil {
		gw = gwReq.Header
	}
	a := applier{dst: dst, owned: owned, size: r.Len(), left: r.maxBytes, bounded: r.maxBytes > 0}
	if len(gw) > 0 {
		connection := gw["Connection"]
		forwardable := func(name string) bool {
			return connection == nil || !listed(connection, name)
		}
		for _, name := range r.names {
			if values := gw[name]; len(values) > 0 && forwardable(name) {
				if err := a.add(name, values); err != nil {
					return dst, err
				}
			}
		}
		if len(r.matching) > 0 {
			for _, name := range sortedHeaderNames(gw) {
				if Never(name) || !forwardable(name) || !matchesAny(r.matching, name) {
					continue
				}
				if err := a.add(name, gw[name]); err != nil {
					return dst, err
				}
			}
		}
		for _, p := range r.rename {
			if values := gw[p.from]; len(values) > 0 && forwardable(p.from) {
				if err := a.add(p.to, values); err != nil {
					return dst, err
				}
			}
		}
	}
	for _, p := range r.set {
		if err := a.add(p.from, []string{p.to}); err != nil {
			return dst, err
		}
	}
	for _, v := range r.values {
		if _, ok := a.dst[v.name]; ok {
			continue
		}
		if value, ok := v.fn(ctx, gwReq); ok {
			if err := a.add(v.name, []string{value}); err != nil {
				return dst, err
			}
		}
	}
	return a.dst, nil
}

// applier adds headers to dst, cloning it first unless it is owned.
type applier struct {
	dst     http.Header
	owned   bool
	size    int
	left    int  // bytes the rules may still add, if bounded
	bounded bool // maxBytes > 0
}

func (a *applier) add(name string, values []string) error {
	if _, ok := a.dst[name]; ok {
		return nil
	}
	for _, v := range values {
		if strings.ContainsAny(v, "\r\n\x00") {
			return fmt.Errorf("forwarding gateway header %s: %w", name, fault.ErrInvalidHeaderValue)
		}
		if a.bounded {
			if a.left -= len(name) + len(v) + 4; a.left < 0 {
				return fmt.Errorf("forwarding gateway header %s: %w", name, fault.ErrHeadersTooLarge)
			}
		}
	}
	if !a.owned || a.dst == nil {
		clone := make(http.Header, len(a.dst)+a.size)
		for k, v := range a.dst {
			clone[k] = v
		}
		a.dst, a.owned = clone, true
	}
	a.dst[name] = values
	return nil
}

func matchesAny(res []*regexp.Regexp, name string) bool {
	for _, re := range res {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

func sortedHeaderNames(h http.Header) []string {
	names := make([]string, 0, len(h))
	for n := range h {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
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
