package respcache

import (
	"net/http"
	"slices"
	"strings"
	"time"
)

// Policy is a schema's cache settings as the stage reads them
// (env.ResponseCacheSettings, resolved). The stage builds it from settings
// that env has validated; the zero values below fail closed.
type Policy struct {
	// MaxEntryBytes is the largest body stored: an answer whose
	// Content-Length is above it is not stored (so with 0, only empty
	// answers of known length are).
	MaxEntryBytes int
	// DefaultTTL is the lifetime of an answer that has no freshness of its
	// own (no s-maxage, no max-age, no Expires): RFC 9111's heuristic
	// freshness (4.2.2), made explicit. <= 0: such answers are not stored.
	DefaultTTL time.Duration
	// MaxTTL caps how long an entry stays fresh in the cache (its lifetime
	// less the age it arrived with) and each of its stale windows. <= 0
	// stores nothing.
	MaxTTL time.Duration
	// Shared is response_cache.shared: an answer marked public, or carrying
	// s-maxage, may answer other callers.
	Shared bool
	// Vary is response_cache.vary: request headers every shared entry is
	// keyed by, as if every answer's Vary named them.
	Vary []string
}

// Request is what a request's own Cache-Control asks of the cache (RFC
// 9111 5.2.1), or its Pragma: no-cache when it has no Cache-Control (RFC
// 9111 5.4).
type Request struct {
	// NoStore: nothing of this call is stored, and it is not answered
	// from the cache either (no-store).
	NoStore bool
	// NoCache: the call is sent, not answered from the cache; its answer
	// may be stored (no-cache, or max-age=0, which no hit could meet).
	NoCache bool
}

// ParseRequest reads the cache directives of a request's headers h.
//
// no-store and no-cache are honoured, in any case and argument form. A
// request's max-age=0 counts as no-cache: the client accepts no answer
// older than 0 seconds, and a hit is always older than that. The other
// request directives (max-age > 0, max-stale, min-fresh, only-if-cached)
// are ignored: the cache answers such a request as any other, as RFC 9111
// lets a cache that does not implement them do. Pragma: no-cache counts
// only when the request has no Cache-Control header at all, as RFC 9111
// 5.4 says.
func ParseRequest(h http.Header) Request {
	var r Request
	cc, ok := h["Cache-Control"]
	if !ok {
		for _, line := range h["Pragma"] {
			for it := (directives{s: line}); it.next(); {
				if strings.EqualFold(it.name, "no-cache") {
					r.NoCache = true
				}
			}
		}
		return r
	}
	for _, line := range cc {
		for it := (directives{s: line}); it.next(); {
			switch {
			case strings.EqualFold(it.name, "no-store"):
				r.NoStore = true
			case strings.EqualFold(it.name, "no-cache"):
				r.NoCache = true
			case strings.EqualFold(it.name, "max-age"):
				if secs, ok := deltaSeconds(it.arg, it.hasArg, it.argOK); ok && secs == 0 {
					r.NoCache = true
				}
			}
		}
	}
	return r
}

// Plan is what the stage does with an answer once its headers are in:
// store it (Store, and the entry's parameters) or not (Reason).
type Plan struct {
	// Store: the answer may be stored, if its body passes CheckBody and
	// fits MaxEntryBytes.
	Store bool
	// Reason is a short fixed label for telemetry. When Store is false, why
	// not: "status", "streaming", "no-store", "no-cache", "vary-star",
	// "too-large", "no-lifetime". When Store is true, why the entry is not
	// shared although Policy.Shared is on and the answer is public or has
	// s-maxage: "private-unshared" or "set-cookie-unshared"; "" otherwise.
	Reason string
	// Lifetime is the entry's freshness lifetime, compared with its age
	// (InitialAge included, Entry.Fresh): at most InitialAge + MaxTTL, and
	// above InitialAge when Store.
	Lifetime time.Duration
	// InitialAge is the age the answer arrived with: its Age header, 0 if
	// absent or invalid (RFC 9111 5.1).
	InitialAge time.Duration
	// Shared: the entry goes to the shared scope.
	Shared bool
	// VaryNames, for a shared entry only, are the request headers its key
	// holds: the answer's Vary and Policy.Vary, canonical, sorted,
	// deduplicated.
	VaryNames []string
	// StaleWhileRevalidate and StaleIfError are the answer's RFC 5861
	// extensions, each capped by MaxTTL; 0 if absent or invalid, or if the
	// answer says must-revalidate or proxy-revalidate.
	StaleWhileRevalidate, StaleIfError time.Duration
	// Tags are the answer's Cache-Tag and then Surrogate-Key values
	// (separated by commas and/or spaces, trimmed, deduplicated, in order);
	// nil if none. The body's tags (CheckBody) are the stage's to add.
	Tags []string
}

// The labels of Plan.Reason.
const (
	reasonStatus    = "status"
	reasonStreaming = "streaming"
	reasonNoStore   = "no-store"
	reasonNoCache   = "no-cache"
	reasonVaryStar  = "vary-star"
	reasonTooLarge  = "too-large"
	reasonLifetime  = "no-lifetime"
	reasonPrivate   = "private-unshared"
	reasonSetCookie = "set-cookie-unshared"
)

// maxDelta is the largest delta-seconds the cache represents: a larger
// value, or one that overflows, is taken as 2^31 seconds (RFC 9111 1.2.2).
const maxDelta = 1 << 31

// Plan decides whether resp, an answer whose headers are in, may be stored,
// and how: RFC 9111 as a shared cache reads it, with these choices where
// the issue or the RFC leaves room:
//
//   - Only status 200 is stored, and never a streamed answer (a
//     Content-Type of multipart/* or text/event-stream).
//   - no-store and no-cache (in any form: no-cache="Set-Cookie" is taken
//     as plain no-cache, since there is no revalidation) are never stored;
//     nor is an answer whose Vary is "*", which RFC 9111 4.1 says no
//     request ever matches; nor one whose Content-Length is above
//     MaxEntryBytes (an unknown length is the stage's to bound while it
//     reads). Pragma in an answer means nothing (RFC 9111 5.4).
//   - The lifetime is s-maxage, else max-age, else Expires less Date (the
//     time of receipt if Date is absent or invalid; an invalid Expires is
//     already expired), else DefaultTTL. s-maxage comes first in both
//     scopes: the identity scope is still a cache inside a gateway, a
//     shared cache in RFC 9111's terms, and Apollo Router reads it so too.
//     A directive that appears more than once counts with its smallest
//     value; an invalid max-age or s-maxage (not delta-seconds) makes the
//     answer stale, so not stored, as RFC 9111 4.2.1 encourages; a value
//     above 2^31 seconds counts as 2^31 (RFC 9111 1.2.2).
//   - The age it arrived with is its Age header alone (the largest, if
//     several; invalid values ignored): the gateway does not correct it by
//     its own clock against Date, which two hosts' clocks would skew. An
//     answer whose age is its whole lifetime or more is not stored; else
//     the time it stays fresh here (lifetime less age) is capped by MaxTTL.
//   - It goes to the shared scope only with Policy.Shared, if it is public
//     or has s-maxage (so an answer to a request with Authorization is
//     shared only as RFC 9111 3.5 allows), is not private (in any form:
//     private="field" is taken whole), and sets no cookie: RFC 9111 lets a
//     cache store an answer with Set-Cookie, but sharing it would hand one
//     user's cookie to another. Such answers are stored in the identity
//     scope, whose key holds every request header, so they go back only
//     to the caller who could have got them from the source schema.
//   - must-revalidate and proxy-revalidate answers are stored, but may
//     never be served stale: their stale windows are 0. s-maxage alone does
//     not zero them (RFC 9111 gives it proxy-revalidate's meaning for a
//     shared cache, but an answer that sends stale-while-revalidate or
//     stale-if-error beside it asks for them, as CDNs read it).
func (p Policy) Plan(resp *http.Response) Plan {
	return p.plan(resp, time.Now())
}

// plan is Plan with the time of receipt given, which only an Expires
// without a valid Date needs.
func (p Policy) plan(resp *http.Response, now time.Time) Plan {
	if resp == nil || resp.StatusCode != http.StatusOK {
		return Plan{Reason: reasonStatus}
	}
	h := resp.Header
	if streamed(h["Content-Type"]) {
		return Plan{Reason: reasonStreaming}
	}
	var cc responseDirectives
	for _, line := range h["Cache-Control"] {
		cc.parse(line)
	}
	switch {
	case cc.noStore:
		return Plan{Reason: reasonNoStore}
	case cc.noCache:
		return Plan{Reason: reasonNoCache}
	}
	vary, star := varyNames(h["Vary"])
	if star {
		return Plan{Reason: reasonVaryStar}
	}
	if resp.ContentLength > int64(p.MaxEntryBytes) {
		return Plan{Reason: reasonTooLarge}
	}

	age := ageOf(h["Age"])
	life, ok := p.lifetime(&cc, h, now)
	if !ok || p.MaxTTL <= 0 || age >= life {
		return Plan{Reason: reasonLifetime}
	}
	plan := Plan{
		Store:      true,
		Lifetime:   age + min(life-age, p.MaxTTL),
		InitialAge: age,
		Tags:       tagsOf(h["Cache-Tag"], h["Surrogate-Key"]),
	}
	if !cc.mustRevalidate && !cc.proxyRevalidate {
		plan.StaleWhileRevalidate = p.window(cc.staleWhileRevalidate)
		plan.StaleIfError = p.window(cc.staleIfError)
	}
	if p.Shared && (cc.public || cc.sMaxAge.present) {
		switch {
		case cc.private:
			plan.Reason = reasonPrivate
		case len(h["Set-Cookie"]) > 0:
			plan.Reason = reasonSetCookie
		default:
			plan.Shared = true
			plan.VaryNames = mergeNames(vary, p.Vary)
		}
	}
	return plan
}

// lifetime returns the answer's freshness lifetime, before its age and
// MaxTTL; ok is false when it has none, or an invalid one.
func (p Policy) lifetime(cc *responseDirectives, h http.Header, now time.Time) (time.Duration, bool) {
	switch {
	case cc.sMaxAge.invalid || cc.maxAge.invalid:
		return 0, false
	case cc.sMaxAge.present:
		return cc.sMaxAge.duration(), true
	case cc.maxAge.present:
		return cc.maxAge.duration(), true
	}
	if expires, ok := h["Expires"]; ok {
		date := now
		if d := h["Date"]; len(d) > 0 {
			if t, err := http.ParseTime(d[0]); err == nil {
				date = t
			}
		}
		var life time.Duration
		for i, v := range expires {
			t, err := http.ParseTime(v)
			if err != nil {
				return 0, false // an invalid Expires is in the past (RFC 9111 5.3)
			}
			if l := t.Sub(date); i == 0 || l < life {
				life = l
			}
		}
		return life, life > 0
	}
	return p.DefaultTTL, p.DefaultTTL > 0
}

// window returns a stale window d as the entry keeps it: 0 if absent or
// invalid, at most MaxTTL.
func (p Policy) window(d delta) time.Duration {
	if !d.present || d.invalid {
		return 0
	}
	return min(d.duration(), p.MaxTTL)
}

// streamed reports whether a Content-Type is one of a streamed answer
// (incremental delivery, subscriptions over SSE), which is never whole.
func streamed(types []string) bool {
	for _, t := range types {
		mt, _, _ := strings.Cut(t, ";")
		mt = strings.TrimSpace(mt)
		if strings.EqualFold(mt, "text/event-stream") ||
			len(mt) >= len("multipart/") && strings.EqualFold(mt[:len("multipart/")], "multipart/") {
			return true
		}
	}
	return false
}

// varyNames returns the header names of Vary's values, canonical, and
// whether one is "*".
func varyNames(lines []string) (names []string, star bool) {
	for _, line := range lines {
		for v := range strings.SplitSeq(line, ",") {
			v = strings.TrimSpace(v)
			switch v {
			case "":
			case "*":
				return nil, true
			default:
				names = append(names, http.CanonicalHeaderKey(v))
			}
		}
	}
	return names, false
}

// mergeNames returns a ∪ b, canonical, sorted, without duplicates; nil if
// both are empty.
func mergeNames(a, b []string) []string {
	if len(a)+len(b) == 0 {
		return nil
	}
	names := make([]string, 0, len(a)+len(b))
	names = append(names, a...)
	for _, n := range b {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, http.CanonicalHeaderKey(n))
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// ageOf returns an Age header's value: the largest valid delta-seconds of
// its values, 0 if none is valid.
func ageOf(lines []string) time.Duration {
	var age int64
	for _, line := range lines {
		for v := range strings.SplitSeq(line, ",") {
			if secs, ok := parseDelta(strings.TrimSpace(v)); ok {
				age = max(age, secs)
			}
		}
	}
	return time.Duration(age) * time.Second
}

// tagsOf returns the tags of the Cache-Tag and Surrogate-Key header lines,
// split at commas and white space, without duplicates, in order.
func tagsOf(headers ...[]string) []string {
	var tags []string
	for _, lines := range headers {
		for _, line := range lines {
			for t := range strings.FieldsFuncSeq(line, isTagSeparator) {
				tags = append(tags, t)
			}
		}
	}
	return dedupe(tags)
}

func isTagSeparator(r rune) bool { return r == ',' || r == ' ' || r == '\t' }

// dedupe removes the later duplicates of tags, in place, keeping the
// order; nil if tags is empty.
func dedupe(tags []string) []string {
	if len(tags) == 0 {
		return nil
	}
	if len(tags) <= 16 { // a handful: a scan is cheaper than a map
		out := tags[:0]
		for _, t := range tags {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
		return out
	}
	seen := make(map[string]struct{}, len(tags))
	out := tags[:0]
	for _, t := range tags {
		if _, dup := seen[t]; !dup {
			seen[t] = struct{}{}
			out = append(out, t)
		}
	}
	return out
}

// delta is a delta-seconds directive as an answer gave it, perhaps more
// than once.
type delta struct {
	present bool  // it appeared
	invalid bool  // one of its appearances was not delta-seconds
	secs    int64 // the smallest valid value, at most maxDelta
}

// add records one appearance of the directive: the smallest value counts
// (the most restrictive), and one invalid appearance makes it invalid.
func (d *delta) add(it *directives) {
	if secs, ok := deltaSeconds(it.arg, it.hasArg, it.argOK); !ok {
		d.invalid = true
	} else if !d.present || secs < d.secs {
		d.secs = secs
	}
	d.present = true
}

func (d delta) duration() time.Duration { return time.Duration(d.secs) * time.Second }

// responseDirectives are the Cache-Control directives of an answer that
// the cache reads.
type responseDirectives struct {
	noStore, noCache, private, public  bool
	mustRevalidate, proxyRevalidate    bool
	maxAge, sMaxAge                    delta
	staleWhileRevalidate, staleIfError delta
}

// parse adds the directives of one Cache-Control line. Names are matched
// without case; unknown directives are ignored (RFC 9111 5.2.3).
func (cc *responseDirectives) parse(line string) {
	for it := (directives{s: line}); it.next(); {
		switch n := it.name; {
		case strings.EqualFold(n, "no-store"):
			cc.noStore = true
		case strings.EqualFold(n, "no-cache"):
			cc.noCache = true
		case strings.EqualFold(n, "private"):
			cc.private = true
		case strings.EqualFold(n, "public"):
			cc.public = true
		case strings.EqualFold(n, "must-revalidate"):
			cc.mustRevalidate = true
		case strings.EqualFold(n, "proxy-revalidate"):
			cc.proxyRevalidate = true
		case strings.EqualFold(n, "max-age"):
			cc.maxAge.add(&it)
		case strings.EqualFold(n, "s-maxage"):
			cc.sMaxAge.add(&it)
		case strings.EqualFold(n, "stale-while-revalidate"):
			cc.staleWhileRevalidate.add(&it)
		case strings.EqualFold(n, "stale-if-error"):
			cc.staleIfError.add(&it)
		}
	}
}

// directives walks the directives of one Cache-Control (or Pragma) line:
// name [= token | quoted-string], separated by commas, tolerant of white
// space around names, "=" and values. A comma inside a quoted value does
// not end the directive.
type directives struct {
	s string // the rest of the line

	name   string // the directive's name, as written
	arg    string // its argument, unquoted; "" if none
	hasArg bool   // it has "="
	argOK  bool   // a quoted argument is well formed (closed, nothing after it)
}

// next moves to the next directive; false at the end of the line.
func (d *directives) next() bool {
	for {
		s := strings.TrimLeft(d.s, " \t,")
		if s == "" {
			d.s = ""
			return false
		}
		end := strings.IndexAny(s, "=,")
		if end < 0 {
			end = len(s)
		}
		d.name = strings.TrimRight(s[:end], " \t")
		d.arg, d.hasArg, d.argOK = "", false, true
		s = s[end:]
		if s != "" && s[0] == '=' {
			d.hasArg = true
			s = strings.TrimLeft(s[1:], " \t")
			if s != "" && s[0] == '"' {
				d.arg, s, d.argOK = quoted(s)
			} else {
				end := strings.IndexByte(s, ',')
				if end < 0 {
					end = len(s)
				}
				d.arg, s = strings.TrimRight(s[:end], " \t"), s[end:]
			}
		}
		d.s = s
		if d.name != "" {
			return true
		}
	}
}

// quoted reads the quoted-string s starts with and returns its value, the
// rest of s from the next comma, and whether it was well formed: closed,
// and followed by nothing but white space before that comma.
func quoted(s string) (val, rest string, ok bool) {
	var b strings.Builder // used only if the value has a quoted-pair
	start := 1
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 == len(s) {
				return "", "", false
			}
			b.WriteString(s[start:i])
			start = i + 1
			i++ // the escaped byte is kept by the next WriteString
		case '"':
			if start > 1 { // a quoted-pair was met
				b.WriteString(s[start:i])
				val = b.String()
			} else {
				val = s[1:i]
			}
			rest = s[i+1:]
			end := strings.IndexByte(rest, ',')
			if end < 0 {
				end = len(rest)
			}
			return val, rest[end:], strings.Trim(rest[:end], " \t") == ""
		}
	}
	return "", "", false // not closed: the rest of the line was its value
}

// deltaSeconds reads a directive's argument as delta-seconds (RFC 9111
// 1.2.2); ok is false if there is none or it is not one.
func deltaSeconds(arg string, hasArg, argOK bool) (int64, bool) {
	if !hasArg || !argOK {
		return 0, false
	}
	return parseDelta(arg)
}

// parseDelta parses delta-seconds: one or more digits, a value above
// maxDelta counting as maxDelta.
func parseDelta(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n < maxDelta {
			n = n*10 + int64(c-'0')
		}
	}
	return min(n, maxDelta), true
}
