package respcache

import (
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Policy is a schema's cache settings as the stage reads them
// (env.ResponseCacheSettings, resolved). The stage builds it from settings
// that env has validated, and never changes it after (a reload builds a
// new one); the zero values below fail closed.
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
	// StaleIfError is response_cache.stale_if_error: the stale-if-error
	// window of an answer that sends none (and no must-revalidate or
	// proxy-revalidate), capped by MaxTTL. <= 0: none.
	StaleIfError time.Duration
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
// store it (Store, and the entry's parameters) or not (Reason). Plan's
// caller owns it: its slices and strings share no memory with the answer
// (whose header strings may be borrowed).
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
		if !cc.staleIfError.present && p.StaleIfError > 0 {
			plan.StaleIfError = min(p.StaleIfError, p.MaxTTL)
		}
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

// mergeNames returns a (the answer's Vary names, canonical) ∪ b,
// canonical, sorted, without duplicates; nil if both are empty. The names
// of a are copied: an answer's header strings may be borrowed memory (the
// h1 engine's, under PostFunc) that the entry must not alias.
func mergeNames(a, b []string) []string {
	if len(a)+len(b) == 0 {
		return nil
	}
	names := make([]string, 0, len(a)+len(b))
	for _, n := range a {
		names = append(names, strings.Clone(n))
	}
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
// split at commas and white space, without duplicates, in order; copied,
// since the lines may be borrowed memory (see mergeNames).
func tagsOf(headers ...[]string) []string {
	var tags []string
	for _, lines := range headers {
		for _, line := range lines {
			for t := range strings.FieldsFuncSeq(line, isTagSeparator) {
				tags = append(tags, t)
			}
		}
	}
	tags = dedupe(tags)
	for i, t := range tags {
		tags[i] = strings.Clone(t)
	}
	return tags
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

// CheckBody reports whether body, a whole answer, may be stored: a JSON
// object whose "errors" member is absent, null or an empty array (every
// "errors" member, if the object repeats it); and returns the strings of
// its extensions.apolloCacheTags, without duplicates and empty strings, in
// order. A value there that is not an array of strings gives no tags and
// does not stop the answer being stored. Invalid JSON (as encoding/json
// reads it: the same grammar and nesting bound, bytes of invalid UTF-8
// allowed inside strings), a non-object, or a non-empty errors: ok false.
//
// It is one pass over the bytes that decodes nothing but the tags, so an
// answer without tags costs no allocation.
func CheckBody(body []byte) (tags []string, ok bool) {
	s := scanner{b: body}
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '{' || !s.object(1, answerObject, &tags) {
		return nil, false
	}
	s.space()
	if s.i != len(s.b) {
		return nil, false
	}
	return dedupe(tags), true
}

// maxDepth is how deep JSON values may nest: encoding/json's bound, so
// that CheckBody takes what it takes.
const maxDepth = 10000

// scanner reads JSON from b[i:]. Each method returns false on a syntax
// error, with i anywhere. A scanner is one CheckBody call's, on its stack.
type scanner struct {
	b []byte // the answer's body, read only
	i int    // the next byte to read
}

// space skips JSON white space.
func (s *scanner) space() {
	b, i := s.b, s.i
	for i < len(b) && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	s.i = i
}

// The objects CheckBody tells apart: what it does with their members.
type objectKind uint8

const (
	anyObject        objectKind = iota // any object: its members are skipped
	answerObject                       // the answer: topMember
	extensionsObject                   // its extensions: extensionsMember
)

// object reads an object of kind at b[i] (a '{'), at depth.
func (s *scanner) object(depth int, kind objectKind, tags *[]string) bool {
	if depth > maxDepth {
		return false
	}
	if s.open('}') {
		return true
	}
	for {
		start, end, escaped, ok := s.str()
		if !ok {
			return false
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		s.space()
		key := s.b[start:end]
		switch kind {
		case answerObject:
			ok = s.topMember(key, escaped, depth, tags)
		case extensionsObject:
			ok = s.extensionsMember(key, escaped, depth, tags)
		default:
			ok = s.value(depth)
		}
		if !ok {
			return false
		}
		if more, ok := s.next('}'); !more {
			return ok
		}
	}
}

// open steps past the '{' or '[' at b[i] and the white space after it,
// and past close too if the container is empty, which it reports.
func (s *scanner) open(close byte) (empty bool) {
	s.i++
	s.space()
	if s.i < len(s.b) && s.b[s.i] == close {
		s.i++
		return true
	}
	return false
}

// next steps past what follows a container's member or element: a comma
// (more) or close (not more, ok); anything else is not ok.
func (s *scanner) next(close byte) (more, ok bool) {
	s.space()
	if s.i < len(s.b) {
		switch s.b[s.i] {
		case ',':
			s.i++
			s.space()
			return true, true
		case close:
			s.i++
			return false, true
		}
	}
	return false, false
}

// topMember reads a member of the answer's object: errors must be null or
// empty, extensions is searched for tags, any other is skipped.
func (s *scanner) topMember(key []byte, escaped bool, depth int, tags *[]string) bool {
	switch {
	case keyIs(key, escaped, "errors"):
		if s.literal("null") {
			return true
		}
		if s.i >= len(s.b) || s.b[s.i] != '[' {
			return false
		}
		s.i++
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ']' {
			return false // not empty (or not JSON): not stored either way
		}
		s.i++
		return true
	case keyIs(key, escaped, "extensions") && s.i < len(s.b) && s.b[s.i] == '{':
		return s.object(depth+1, extensionsObject, tags)
	}
	return s.value(depth)
}

// extensionsMember reads a member of the answer's extensions: the strings
// of apolloCacheTags go to tags, any other member is skipped.
func (s *scanner) extensionsMember(key []byte, escaped bool, depth int, tags *[]string) bool {
	if keyIs(key, escaped, "apolloCacheTags") && s.i < len(s.b) && s.b[s.i] == '[' {
		return s.array(depth+1, tags)
	}
	return s.value(depth)
}

// value skips the value at b[i], inside a container at depth.
func (s *scanner) value(depth int) bool {
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		_, _, _, ok := s.str()
		return ok
	case c == '{':
		return s.object(depth+1, anyObject, nil)
	case c == '[':
		return s.array(depth+1, nil)
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return false
}

// array skips the array at b[i] (a '['), at depth. With tags, its elements are
// apolloCacheTags: if every one is a string, their values (but "") go to
// tags.
func (s *scanner) array(depth int, tags *[]string) bool {
	if depth > maxDepth {
		return false
	}
	if s.open(']') {
		return true
	}
	var mark int
	if tags != nil {
		mark = len(*tags)
	}
	for {
		if tags == nil || s.i >= len(s.b) || s.b[s.i] != '"' {
			if !s.value(depth) {
				return false
			}
			if tags != nil { // not an array of strings: no tags from it
				*tags, tags = (*tags)[:mark], nil
			}
		} else {
			start, end, escaped, ok := s.str()
			if !ok {
				return false
			}
			if end > start {
				*tags = append(*tags, jsonString(s.b[start-1:end+1], escaped))
			}
		}
		if more, ok := s.next(']'); !more {
			return ok
		}
	}
}

// literal reads word (true, false, null) at b[i].
func (s *scanner) literal(word string) bool {
	if len(s.b)-s.i < len(word) || string(s.b[s.i:s.i+len(word)]) != word {
		return false
	}
	s.i += len(word)
	return true
}

// number reads a number at b[i]: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	if s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i >= len(s.b):
		return false
	case s.b[s.i] == '0':
		s.i++
	case s.b[s.i] >= '1' && s.b[s.i] <= '9':
		s.digits()
	default:
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !s.digits() {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

// digits skips one or more digits; false if there is none.
func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

// str reads the string at b[i] and returns its contents' bounds in b, and
// whether they hold an escape.
func (s *scanner) str() (start, end int, escaped, ok bool) {
	b, i := s.b, s.i
	if i >= len(b) || b[i] != '"' {
		return 0, 0, false, false
	}
	i++
	start = i
	for {
		// Skip what needs no look, eight bytes at a time where it can.
		for i+8 <= len(b) {
			if m := special(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		if i+8 > len(b) {
			for i < len(b) && plainByte[b[i]] {
				i++
			}
		}
		if i >= len(b) {
			return 0, 0, false, false
		}
		switch b[i] {
		case '"':
			s.i = i + 1
			return start, i, escaped, true
		case '\\':
			escaped = true
			if i+1 >= len(b) {
				return 0, 0, false, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return 0, 0, false, false
				}
				i += 6
			default:
				return 0, 0, false, false
			}
		default: // a control character
			return 0, 0, false, false
		}
	}
}

// plainByte tells the bytes a string holds as they are: all but '"',
// '\\' and control characters.
var plainByte = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c != '"' && c != '\\'
	}
	return t
}()

// special returns a mask with the high bit of each byte of x (little
// endian) that is '"', '\\' or a control character (below 0x20) set: the
// classic "has a byte less than n" and "has a zero byte" word tests. A
// byte above a flagged one may be flagged wrongly (a borrow), but the
// lowest flagged byte is always right, and only it is used.
func special(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q := x ^ (ones * '"')
	bs := x ^ (ones * '\\')
	return ((x-ones*0x20)&^x | (q-ones)&^q | (bs-ones)&^bs) & highs
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// keyIs reports whether the contents of a JSON string, key, decode to
// target (ASCII), without decoding it into memory.
func keyIs(key []byte, escaped bool, target string) bool {
	if !escaped {
		return string(key) == target
	}
	j := 0
	for i := 0; i < len(key); j++ {
		c := key[i]
		if c == '\\' {
			switch e := key[i+1]; e {
			case 'u':
				r := hexVal(key[i+2])<<12 | hexVal(key[i+3])<<8 | hexVal(key[i+4])<<4 | hexVal(key[i+5])
				if r >= 0x80 {
					return false // not ASCII (or a surrogate, decoded as U+FFFD)
				}
				c = byte(r)
				i += 6
			default:
				c = unescape(e)
				i += 2
			}
		} else {
			i++
		}
		if j >= len(target) || c != target[j] {
			return false
		}
	}
	return j == len(target)
}

// unescape returns the byte a one-letter JSON escape stands for.
func unescape(e byte) byte {
	switch e {
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return e // '"', '\\', '/'
}

func hexVal(c byte) rune {
	switch {
	case c >= 'a':
		return rune(c-'a') + 10
	case c >= 'A':
		return rune(c-'A') + 10
	}
	return rune(c - '0')
}

// jsonString decodes the JSON string quoted (its quotes included, checked
// valid) as encoding/json does: escapes decoded, invalid UTF-8 replaced.
func jsonString(quoted []byte, escaped bool) string {
	contents := quoted[1 : len(quoted)-1]
	if !escaped && utf8.Valid(contents) {
		return string(contents)
	}
	var v string
	if json.Unmarshal(quoted, &v) != nil {
		return "" // cannot happen: str checked it
	}
	return v
}
