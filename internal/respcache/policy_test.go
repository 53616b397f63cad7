package respcache

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

// received is the time the answers of the tests arrive, and their Date.
var received = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// wireAnswer reads an answer as it comes off the wire: status line, then the
// header lines given (each "Name: value", one per element, so a name may
// repeat), as net/http reads them.
func wireAnswer(t *testing.T, status string, lines ...string) *http.Response {
	t.Helper()
	raw := "HTTP/1.1 " + status + "\r\n" + strings.Join(append(lines, "", ""), "\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(raw)), nil)
	if err != nil {
		t.Fatalf("reading the answer %q: %v", raw, err)
	}
	return resp
}

// stored is a Plan that stores, with the given lifetime in the identity
// scope.
func stored(life time.Duration) Plan { return Plan{Store: true, Lifetime: life} }

func TestPlan(t *testing.T) {
	base := Policy{MaxEntryBytes: 1024, MaxTTL: time.Hour, Shared: true, Vary: []string{"X-Tenant"}}
	date := "Date: " + received.Format(http.TimeFormat)
	at := func(d time.Duration) string { return received.Add(d).Format(http.TimeFormat) }
	shared := func(life time.Duration, vary ...string) Plan {
		return Plan{Store: true, Lifetime: life, Shared: true, VaryNames: vary}
	}
	with := func(p Plan, f func(*Plan)) Plan { f(&p); return p }
	policy := func(f func(*Policy)) Policy { p := base; p.Vary = []string{"X-Tenant"}; f(&p); return p }
	notShared := func(p *Policy) { p.Shared = false }
	defaultTTL := func(p *Policy) { p.DefaultTTL = 30 * time.Second }
	not := func(reason string) Plan { return Plan{Reason: reason} }

	for _, c := range []struct {
		name   string
		policy Policy
		status string // "" is 200 OK
		lines  []string
		want   Plan
	}{
		{name: "max-age stored in the identity scope", lines: []string{"Cache-Control: max-age=60"}, want: stored(time.Minute)},
		{name: "public shared, keyed by response_cache.vary", lines: []string{"Cache-Control: public, max-age=60"}, want: shared(time.Minute, "X-Tenant")},
		{name: "s-maxage wins over max-age", lines: []string{"Cache-Control: max-age=10, s-maxage=60"}, want: shared(time.Minute, "X-Tenant")},
		{name: "s-maxage wins even when shorter", lines: []string{"Cache-Control: public, max-age=600, s-maxage=5"}, want: shared(5*time.Second, "X-Tenant")},
		{name: "s-maxage first in the identity scope too", policy: policy(notShared), lines: []string{"Cache-Control: s-maxage=60, max-age=10"}, want: stored(time.Minute)},
		{name: "public not shared without response_cache.shared", policy: policy(notShared), lines: []string{"Cache-Control: public, max-age=60", "Vary: Accept"}, want: stored(time.Minute)},
		{name: "not public: identity scope, no reason", lines: []string{"Cache-Control: max-age=60", "Vary: Accept"}, want: stored(time.Minute)},
		{name: "private never shared", lines: []string{"Cache-Control: private, s-maxage=60"}, want: with(stored(time.Minute), func(p *Plan) { p.Reason = "private-unshared" })},
		{name: "private with field names is private", lines: []string{`Cache-Control: public, private="X-User, X-Other", max-age=60`}, want: with(stored(time.Minute), func(p *Plan) { p.Reason = "private-unshared" })},
		{name: "set-cookie not shared", lines: []string{"Cache-Control: public, max-age=60", "Set-Cookie: session=alice"}, want: with(stored(time.Minute), func(p *Plan) { p.Reason = "set-cookie-unshared" })},
		{name: "set-cookie stored in the identity scope without shared", policy: policy(notShared), lines: []string{"Cache-Control: public, max-age=60", "Set-Cookie: session=alice"}, want: stored(time.Minute)},
		{name: "Vary star", lines: []string{"Cache-Control: public, max-age=60", "Vary: Accept, *"}, want: not("vary-star")},
		{name: "Vary star not stored in the identity scope either", policy: policy(notShared), lines: []string{"Cache-Control: max-age=60", "Vary: *"}, want: not("vary-star")},
		{name: "Vary merged canonical sorted deduplicated", lines: []string{"Cache-Control: public, max-age=60", "Vary: accept-language, x-tenant", "Vary: Accept-Language,,Accept"}, want: shared(time.Minute, "Accept", "Accept-Language", "X-Tenant")},
		{name: "shared without any vary", policy: policy(func(p *Policy) { p.Vary = nil }), lines: []string{"Cache-Control: public, max-age=60"}, want: shared(time.Minute)},

		{name: "status 404", status: "404 Not Found", lines: []string{"Cache-Control: public, max-age=60"}, want: not("status")},
		{name: "status 203", status: "203 Non-Authoritative Information", lines: []string{"Cache-Control: public, max-age=60"}, want: not("status")},
		{name: "status 206", status: "206 Partial Content", lines: []string{"Cache-Control: public, max-age=60"}, want: not("status")},
		{name: "multipart/mixed streamed", lines: []string{"Cache-Control: public, max-age=60", `Content-Type: multipart/mixed; boundary="-"`}, want: not("streaming")},
		{name: "event stream streamed, any case", lines: []string{"Cache-Control: public, max-age=60", "Content-Type: Text/Event-Stream ; charset=utf-8"}, want: not("streaming")},
		{name: "graphql-response+json stored", lines: []string{"Cache-Control: max-age=60", "Content-Type: application/graphql-response+json; charset=utf-8"}, want: stored(time.Minute)},
		{name: "no-store", lines: []string{"Cache-Control: public, max-age=60, no-store"}, want: not("no-store")},
		{name: "NO-STORE in capitals", lines: []string{"Cache-Control: max-age=60, NO-STORE"}, want: not("no-store")},
		{name: "no-store on a line of its own", lines: []string{"Cache-Control: public, max-age=60", "Cache-Control: no-store"}, want: not("no-store")},
		{name: "no-cache", lines: []string{"Cache-Control: no-cache, max-age=60"}, want: not("no-cache")},
		{name: "no-cache field form", lines: []string{`Cache-Control: max-age=60, no-cache="Set-Cookie"`}, want: not("no-cache")},
		{name: "no-cache field list with a comma", lines: []string{`Cache-Control: no-cache="Set-Cookie, X-Foo", public, max-age=60`}, want: not("no-cache")},
		{name: "no-cache with an unclosed quote", lines: []string{`Cache-Control: max-age=60, no-cache="Set-Cookie`}, want: not("no-cache")},
		{name: "a directive's name inside a quoted value is no directive", lines: []string{`Cache-Control: max-age=60, ext="no-store, no-cache"`}, want: stored(time.Minute)},
		{name: "Pragma no-cache in an answer means nothing", lines: []string{"Cache-Control: max-age=60", "Pragma: no-cache"}, want: stored(time.Minute)},
		{name: "unknown directives ignored", lines: []string{`Cache-Control: immutable, max-age=60, x-ext="a, b", no-transform`}, want: stored(time.Minute)},
		{name: "too-large", lines: []string{"Cache-Control: max-age=60", "Content-Length: 1025"}, want: not("too-large")},
		{name: "length at the bound stored", lines: []string{"Cache-Control: max-age=60", "Content-Length: 1024"}, want: stored(time.Minute)},
		{name: "zero max_entry_bytes stores nothing of known length", policy: policy(func(p *Policy) { p.MaxEntryBytes = 0 }), lines: []string{"Cache-Control: max-age=60", "Content-Length: 1"}, want: not("too-large")},

		{name: "Age subtracted", lines: []string{"Cache-Control: max-age=60", "Age: 20"}, want: Plan{Store: true, Lifetime: time.Minute, InitialAge: 20 * time.Second}},
		{name: "Age equal to the lifetime not stored", lines: []string{"Cache-Control: max-age=60", "Age: 60"}, want: not("no-lifetime")},
		{name: "Age beyond s-maxage not stored", lines: []string{"Cache-Control: s-maxage=60, max-age=600", "Age: 61"}, want: not("no-lifetime")},
		{name: "invalid Age is 0", lines: []string{"Cache-Control: max-age=60", "Age: -5"}, want: stored(time.Minute)},
		{name: "several Ages: the largest", lines: []string{"Cache-Control: max-age=60", "Age: 5", "Age: 30, x"}, want: Plan{Store: true, Lifetime: time.Minute, InitialAge: 30 * time.Second}},
		{name: "capped at max_ttl", lines: []string{"Cache-Control: max-age=86400"}, want: stored(time.Hour)},
		{name: "max_ttl caps the time left after Age", lines: []string{"Cache-Control: max-age=86400", "Age: 7200"}, want: Plan{Store: true, Lifetime: 3 * time.Hour, InitialAge: 2 * time.Hour}},
		{name: "max_ttl zero stores nothing", policy: policy(func(p *Policy) { p.MaxTTL = 0 }), lines: []string{"Cache-Control: max-age=60"}, want: not("no-lifetime")},
		{name: "max-age 0 not stored", lines: []string{"Cache-Control: max-age=0"}, want: not("no-lifetime")},
		{name: "duplicate max-age: the smallest", lines: []string{"Cache-Control: max-age=60", "Cache-Control: max-age=30, max-age=45"}, want: stored(30 * time.Second)},
		{name: "invalid max-age is stale even with default ttl", policy: policy(defaultTTL), lines: []string{"Cache-Control: max-age=1m"}, want: not("no-lifetime")},
		{name: "negative max-age is invalid", lines: []string{"Cache-Control: max-age=-1"}, want: not("no-lifetime")},
		{name: "empty max-age is invalid", lines: []string{"Cache-Control: max-age="}, want: not("no-lifetime")},
		{name: "max-age without argument is invalid", lines: []string{"Cache-Control: max-age"}, want: not("no-lifetime")},
		{name: "one invalid duplicate makes max-age invalid", lines: []string{"Cache-Control: max-age=60, max-age=x"}, want: not("no-lifetime")},
		{name: "invalid s-maxage beside a valid max-age", lines: []string{"Cache-Control: max-age=60, s-maxage=soon"}, want: not("no-lifetime")},
		{name: "quoted max-age accepted", lines: []string{`Cache-Control: max-age="60"`}, want: stored(time.Minute)},
		{name: "quoted max-age with a quoted-pair", lines: []string{`Cache-Control: max-age="6\0"`}, want: stored(time.Minute)},
		{name: "unclosed quoted max-age is invalid", lines: []string{`Cache-Control: max-age="60`}, want: not("no-lifetime")},
		{name: "text after a quoted max-age is invalid", lines: []string{`Cache-Control: max-age="60"0`}, want: not("no-lifetime")},
		{name: "spaces around names, = and values", lines: []string{"Cache-Control:  Public ,Max-Age = 60 ,"}, want: shared(time.Minute, "X-Tenant")},
		{name: "huge max-age counts as 2^31 s", policy: policy(func(p *Policy) { p.MaxTTL = 100 * 365 * 24 * time.Hour }), lines: []string{"Cache-Control: max-age=99999999999999999999999"}, want: stored(1 << 31 * time.Second)},

		{name: "max-age past 2^64 counts as 2^31 s", policy: policy(func(p *Policy) { p.MaxTTL = 100 * 365 * 24 * time.Hour }), lines: []string{"Cache-Control: max-age=18446744073709551676"}, want: stored(1 << 31 * time.Second)},

		{name: "default ttl only without directives", policy: policy(defaultTTL), want: stored(30 * time.Second)},
		{name: "default ttl for public alone, shared", policy: policy(defaultTTL), lines: []string{"Cache-Control: public"}, want: shared(30*time.Second, "X-Tenant")},
		{name: "default ttl not used beside max-age", policy: policy(defaultTTL), lines: []string{"Cache-Control: max-age=10"}, want: stored(10 * time.Second)},
		{name: "default ttl less Age", policy: policy(defaultTTL), lines: []string{"Age: 30"}, want: not("no-lifetime")},
		{name: "no directives without default ttl", want: not("no-lifetime")},
		{name: "public alone without default ttl", lines: []string{"Cache-Control: public"}, want: not("no-lifetime")},

		{name: "Expires relative to Date", lines: []string{date, "Expires: " + at(2*time.Minute)}, want: stored(2 * time.Minute)},
		{name: "Expires relative to receipt without Date", lines: []string{"Expires: " + at(2*time.Minute)}, want: stored(2 * time.Minute)},
		{name: "Expires relative to receipt with an invalid Date", lines: []string{"Date: yesterday", "Expires: " + at(2*time.Minute)}, want: stored(2 * time.Minute)},
		{name: "Expires in the past", policy: policy(defaultTTL), lines: []string{date, "Expires: " + at(-time.Minute)}, want: not("no-lifetime")},
		{name: "invalid Expires is expired, even with default ttl", policy: policy(defaultTTL), lines: []string{date, "Expires: 0"}, want: not("no-lifetime")},
		{name: "several Expires: the earliest", lines: []string{date, "Expires: " + at(5*time.Minute), "Expires: " + at(2*time.Minute)}, want: stored(2 * time.Minute)},
		{name: "max-age wins over Expires", lines: []string{date, "Expires: " + at(-time.Minute), "Cache-Control: max-age=60"}, want: stored(time.Minute)},
		{name: "Expires capped at max_ttl", lines: []string{date, "Expires: " + at(48*time.Hour)}, want: stored(time.Hour)},

		{name: "stale windows read", lines: []string{"Cache-Control: max-age=60, stale-while-revalidate=30, stale-if-error=300"}, want: with(stored(time.Minute), func(p *Plan) {
			p.StaleWhileRevalidate, p.StaleIfError = 30*time.Second, 5*time.Minute
		})},
		{name: "stale windows kept beside s-maxage", lines: []string{"Cache-Control: s-maxage=60, stale-while-revalidate=30"}, want: with(shared(time.Minute, "X-Tenant"), func(p *Plan) { p.StaleWhileRevalidate = 30 * time.Second })},
		{name: "must-revalidate stored without stale windows", lines: []string{"Cache-Control: max-age=60, must-revalidate, stale-while-revalidate=30, stale-if-error=300"}, want: stored(time.Minute)},
		{name: "proxy-revalidate stored without stale windows", lines: []string{"Cache-Control: max-age=60, stale-if-error=300", "Cache-Control: Proxy-Revalidate"}, want: stored(time.Minute)},
		{name: "invalid stale window is 0", lines: []string{"Cache-Control: max-age=60, stale-if-error=x, stale-while-revalidate=30"}, want: with(stored(time.Minute), func(p *Plan) { p.StaleWhileRevalidate = 30 * time.Second })},
		{name: "default stale-if-error for an answer without one", policy: policy(func(p *Policy) { p.StaleIfError = 10 * time.Minute }), lines: []string{"Cache-Control: max-age=60, stale-while-revalidate=30"}, want: with(stored(time.Minute), func(p *Plan) {
			p.StaleWhileRevalidate, p.StaleIfError = 30*time.Second, 10*time.Minute
		})},
		{name: "the answer's stale-if-error wins over the default", policy: policy(func(p *Policy) { p.StaleIfError = 10 * time.Minute }), lines: []string{"Cache-Control: max-age=60, stale-if-error=5"}, want: with(stored(time.Minute), func(p *Plan) { p.StaleIfError = 5 * time.Second })},
		{name: "no default stale-if-error with must-revalidate", policy: policy(func(p *Policy) { p.StaleIfError = 10 * time.Minute }), lines: []string{"Cache-Control: max-age=60, must-revalidate"}, want: stored(time.Minute)},
		{name: "default stale-if-error capped at max_ttl", policy: policy(func(p *Policy) { p.StaleIfError = 48 * time.Hour }), lines: []string{"Cache-Control: max-age=60"}, want: with(stored(time.Minute), func(p *Plan) { p.StaleIfError = time.Hour })},
		{name: "duplicate stale window: the smallest", lines: []string{"Cache-Control: max-age=60, stale-if-error=300, stale-if-error=100"}, want: with(stored(time.Minute), func(p *Plan) { p.StaleIfError = 100 * time.Second })},
		{name: "stale windows capped at max_ttl", lines: []string{"Cache-Control: max-age=60, stale-if-error=86400"}, want: with(stored(time.Minute), func(p *Plan) { p.StaleIfError = time.Hour })},

		{name: "tags from both headers deduplicated", lines: []string{"Cache-Control: max-age=60", "Cache-Tag: a, b  c", "Surrogate-Key: c\td a", "Cache-Tag: ,e,"}, want: with(stored(time.Minute), func(p *Plan) { p.Tags = []string{"a", "b", "c", "e", "d"} })},
		{name: "tags of a shared entry", lines: []string{"Cache-Control: public, max-age=60", "Surrogate-Key: product-1 product-2"}, want: with(shared(time.Minute, "X-Tenant"), func(p *Plan) { p.Tags = []string{"product-1", "product-2"} })},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := c.policy
			if p.MaxTTL == 0 && p.MaxEntryBytes == 0 && !p.Shared && p.Vary == nil && p.DefaultTTL == 0 {
				p = base
			}
			status := c.status
			if status == "" {
				status = "200 OK"
			}
			got := p.plan(wireAnswer(t, status, c.lines...), received)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("Plan of %q (-want +got):\n%s", c.lines, diff)
			}
		})
	}
}

// TestPlanOwnsItsStrings: an answer's header strings may be borrowed
// memory that the transport reuses for the next call (PostFunc on the h1
// engine), so the tags and Vary names a Plan gives the entry must not
// alias them.
func TestPlanOwnsItsStrings(t *testing.T) {
	borrowed := []byte("tag-a tag-b|x-tenant, Accept")
	view := unsafe.String(unsafe.SliceData(borrowed), len(borrowed))
	tags, vary, _ := strings.Cut(view, "|")
	resp := wireAnswer(t, "200 OK", "Cache-Control: public, max-age=60")
	resp.Header["Cache-Tag"] = []string{tags}
	resp.Header["Vary"] = []string{vary}
	got := Policy{MaxEntryBytes: 1024, MaxTTL: time.Hour, Shared: true}.plan(resp, received)
	for i := range borrowed {
		borrowed[i] = '#' // the transport reuses the memory
	}
	want := Plan{Store: true, Lifetime: time.Minute, Shared: true, VaryNames: []string{"Accept", "X-Tenant"}, Tags: []string{"tag-a", "tag-b"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Plan after the answer's memory was reused (-want +got):\n%s", diff)
	}
}

// TestPlanReadsTheClock: without a Date, Expires is read against the time
// Plan runs, not a fixed one.
func TestPlanReadsTheClock(t *testing.T) {
	p := Policy{MaxEntryBytes: 1024, MaxTTL: 24 * time.Hour}
	expires := time.Now().Add(2 * time.Hour).Truncate(time.Second)
	got := p.Plan(wireAnswer(t, "200 OK", "Expires: "+expires.Format(http.TimeFormat)))
	if !got.Store || got.Lifetime <= time.Hour || got.Lifetime > 2*time.Hour {
		t.Errorf("Plan with Expires in 2h = %+v, want stored for up to 2h", got)
	}
	if got := p.Plan(nil); got.Store || got.Reason != "status" {
		t.Errorf("Plan(nil) = %+v, want not stored for its status", got)
	}
}

func TestParseRequest(t *testing.T) {
	for _, c := range []struct {
		name  string
		lines []string
		want  Request
	}{
		{name: "nothing", want: Request{}},
		{name: "no-store", lines: []string{"Cache-Control: no-store"}, want: Request{NoStore: true}},
		{name: "no-cache", lines: []string{"Cache-Control: no-cache"}, want: Request{NoCache: true}},
		{name: "any case", lines: []string{"Cache-Control: No-Cache"}, want: Request{NoCache: true}},
		{name: "both on one line", lines: []string{"Cache-Control: no-store, no-cache"}, want: Request{NoStore: true, NoCache: true}},
		{name: "both on two lines", lines: []string{"Cache-Control: no-cache", "Cache-Control: no-store"}, want: Request{NoStore: true, NoCache: true}},
		{name: "no-cache with an argument", lines: []string{`Cache-Control: no-cache="x"`}, want: Request{NoCache: true}},
		{name: "max-age 0 is no-cache", lines: []string{"Cache-Control: max-age=0"}, want: Request{NoCache: true}},
		{name: "max-age above 0 ignored", lines: []string{"Cache-Control: max-age=5, max-stale, min-fresh=3, only-if-cached"}, want: Request{}},
		{name: "invalid max-age ignored", lines: []string{"Cache-Control: max-age=zero"}, want: Request{}},
		{name: "directives inside a quoted value", lines: []string{`Cache-Control: ext="no-store, no-cache"`}, want: Request{}},
		{name: "longer names", lines: []string{"Cache-Control: x-no-store, no-cache-please"}, want: Request{}},
		{name: "Pragma no-cache without Cache-Control", lines: []string{"Pragma: x, NO-CACHE"}, want: Request{NoCache: true}},
		{name: "Pragma ignored beside Cache-Control", lines: []string{"Cache-Control: max-age=5", "Pragma: no-cache"}, want: Request{}},
		{name: "Pragma no-store means nothing", lines: []string{"Pragma: no-store"}, want: Request{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw := "POST /graphql HTTP/1.1\r\nHost: s\r\n" + strings.Join(append(c.lines, "", ""), "\r\n")
			req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
			if err != nil {
				t.Fatalf("reading %q: %v", raw, err)
			}
			if got := ParseRequest(req.Header); got != c.want {
				t.Errorf("ParseRequest(%q) = %+v, want %+v", c.lines, got, c.want)
			}
		})
	}
}

// checkBodyCases are CheckBody's cases, and the fuzz target's seeds.
var checkBodyCases = []struct {
	name string
	body string
	tags []string
	ok   bool
}{
	{"data only", `{"data":{"a":1}}`, nil, true},
	{"empty object", `{}`, nil, true},
	{"white space around", " \t\r\n{ \"data\" : null } \n", nil, true},
	{"errors empty", `{"data":null,"errors":[]}`, nil, true},
	{"errors empty with space", `{"errors":[ ` + "\n" + ` ]}`, nil, true},
	{"errors null", `{"errors":null,"data":{}}`, nil, true},
	{"errors non-empty", `{"data":{"a":1},"errors":[{"message":"x"}]}`, nil, false},
	{"errors an object", `{"errors":{}}`, nil, false},
	{"errors a string", `{"errors":"x"}`, nil, false},
	{"errors false", `{"errors":false}`, nil, false},
	{"errors key escaped", `{"err\u006frs":[1]}`, nil, false},
	{"errors key with a slash escape", `{"errors\/":[1]}`, nil, true},
	{"errors key escaped, a prefix", `{"err\u006f":[1]}`, nil, true},
	{"errors key escaped, a letter beyond ASCII", `{"\u0165rrors":[1]}`, nil, true},
	{"errors key of another case", `{"Errors":[1]}`, nil, true},
	{"errors key longer", `{"errors2":[1]}`, nil, true},
	{"errors nested is not the answer's", `{"data":{"errors":[1]}}`, nil, true},
	{"errors repeated, one non-empty", `{"errors":[],"errors":[1]}`, nil, false},
	{"errors repeated, the first non-empty", `{"errors":[1],"errors":null}`, nil, false},
	{"tags", `{"data":{},"extensions":{"apolloCacheTags":["a","b","a",""],"x":[1]}}`, []string{"a", "b"}, true},
	{"tags decoded", `{"extensions":{"apolloCacheTags":["a\u00e9\n\"","\ud83d\ude00"]}}`, []string{"a\u00e9\n\"", "\U0001F600"}, true},
	{"tags with invalid UTF-8 replaced", "{\"extensions\":{\"apolloCacheTags\":[\"a\xffb\"]}}", []string{"a\ufffdb"}, true},
	{"tags key escaped", `{"extensions":{"apollo\u0043acheTags":["a"]}}`, []string{"a"}, true},
	{"tags from repeated members", `{"extensions":{"apolloCacheTags":["a"]},"extensions":{"apolloCacheTags":["b"],"apolloCacheTags":["a","c"]}}`, []string{"a", "b", "c"}, true},
	{"many tags deduplicated", `{"extensions":{"apolloCacheTags":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q","a","r","b"]}}`, []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r"}, true},
	{"tags a string", `{"extensions":{"apolloCacheTags":"a"}}`, nil, true},
	{"tags with a number", `{"extensions":{"apolloCacheTags":["a",1,"b"]}}`, nil, true},
	{"tags with null", `{"extensions":{"apolloCacheTags":["a",null]}}`, nil, true},
	{"tags empty", `{"extensions":{"apolloCacheTags":[]}}`, nil, true},
	{"extensions not an object", `{"extensions":["apolloCacheTags"]}`, nil, true},
	{"tags not in extensions", `{"data":{"apolloCacheTags":["a"]}}`, nil, true},
	{"tags cut short", `{"extensions":{"apolloCacheTags":[`, nil, false},
	{"tags cut short after a comma", `{"extensions":{"apolloCacheTags":["a", `, nil, false},
	{"tags but errors", `{"extensions":{"apolloCacheTags":["a"]},"errors":[{}]}`, nil, false},
	{"tags but invalid after", `{"extensions":{"apolloCacheTags":["a"]},"data":tru}`, nil, false},
	{"every kind of value", `{"data":{"s":"x\\y\"\/\b\f\n\r\t\u00FF","n":[0,-0,1.5,-2e10,3E+2,4e-1,120],"b":[true,false,null],"o":{"":{}},"a":[[],{}]}}`, nil, true},
	{"invalid UTF-8 in a string", "{\"data\":\"\xff\xfe\"}", nil, true},
	{"empty", ``, nil, false},
	{"space only", ` `, nil, false},
	{"an array", `[]`, nil, false},
	{"a string", `"errors"`, nil, false},
	{"null", `null`, nil, false},
	{"a number, then a brace", `0}`, nil, false},
	{"unclosed", `{"data":{}`, nil, false},
	{"trailing data", `{"data":1}x`, nil, false},
	{"two objects", `{}{}`, nil, false},
	{"trailing comma", `{"data":[1,]}`, nil, false},
	{"trailing member comma", `{"data":1,}`, nil, false},
	{"missing colon", `{"data" 1}`, nil, false},
	{"key not a string", `{data:1}`, nil, false},
	{"leading zero", `{"data":01}`, nil, false},
	{"bare minus", `{"data":-}`, nil, false},
	{"dot without digits", `{"data":1.}`, nil, false},
	{"exponent without digits", `{"data":1e+}`, nil, false},
	{"plus sign", `{"data":+1}`, nil, false},
	{"control character in a string", "{\"data\":\"a\x01\"}", nil, false},
	{"control character inside a long string", "{\"data\":\"abcdefghijk\x1fmnopqrstuvwxyz\"}", nil, false},
	{"quote inside a long string", `{"data":"abcdefghijk"lmnopqrstuvwxyz"}`, nil, false},
	{"unknown escape inside a long string", `{"data":"abcdefghijk\qlmnopqrstuvwxyz"}`, nil, false},
	{"unknown escape", `{"data":"\q"}`, nil, false},
	{"short unicode escape", `{"data":"\u12"}`, nil, false},
	{"bad literal", `{"data":nul}`, nil, false},
	{"byte order mark", "\ufeff{}", nil, false},
	{"single quotes", `{'data':1}`, nil, false},
	{"nested to the bound", `{"data":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + `}`, nil, true},
	{"nested past the bound", `{"data":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`, nil, false},
	{"objects past the bound", `{"data":` + strings.Repeat(`{"a":`, maxDepth) + "1" + strings.Repeat("}", maxDepth) + `}`, nil, false},
	{"tags past the bound", `{"extensions":{"apolloCacheTags":[` + strings.Repeat("[", maxDepth-2) + strings.Repeat("]", maxDepth-2) + `]}}`, nil, false},
}

func TestCheckBody(t *testing.T) {
	for _, c := range checkBodyCases {
		t.Run(c.name, func(t *testing.T) {
			tags, ok := CheckBody([]byte(c.body))
			if ok != c.ok || !cmp.Equal(tags, c.tags) {
				t.Errorf("CheckBody(%.80q) = %q, %v; want %q, %v", c.body, tags, ok, c.tags, c.ok)
			}
			// The cases are the fuzz target's seeds: the reference must agree.
			if rtags, rok := referenceCheckBody([]byte(c.body)); rok != c.ok || !cmp.Equal(rtags, c.tags) {
				t.Errorf("the reference reads %.80q as %q, %v; want %q, %v", c.body, rtags, rok, c.tags, c.ok)
			}
		})
	}
}

// FuzzCheckBody: for any input, CheckBody agrees with a reading built on
// encoding/json (json.Valid, then its Decoder over the top-level members).
func FuzzCheckBody(f *testing.F) {
	for _, c := range checkBodyCases {
		if len(c.body) < 1000 {
			f.Add([]byte(c.body))
		}
	}
	f.Add(benchAnswer)
	f.Fuzz(func(t *testing.T, body []byte) {
		tags, ok := CheckBody(body)
		rtags, rok := referenceCheckBody(body)
		if ok != rok || !cmp.Equal(tags, rtags) {
			t.Errorf("CheckBody(%q) = %q, %v; encoding/json reads %q, %v", body, tags, ok, rtags, rok)
		}
	})
}

// referenceCheckBody is CheckBody's rule on encoding/json: a valid JSON
// object, every top-level "errors" null or an empty array, the tags the
// union of every extensions' apolloCacheTags that is an array of strings.
func referenceCheckBody(body []byte) ([]string, bool) {
	if !json.Valid(body) {
		return nil, false
	}
	var tags []string
	ok := eachMember(body, func(key string, value json.RawMessage) bool {
		switch key {
		case "errors":
			var elems []json.RawMessage
			return string(value) == "null" || value[0] == '[' && json.Unmarshal(value, &elems) == nil && len(elems) == 0
		case "extensions":
			eachMember(value, func(key string, value json.RawMessage) bool {
				if key == "apolloCacheTags" {
					tags = append(tags, referenceTags(value)...)
				}
				return true
			})
		}
		return true
	})
	if !ok {
		return nil, false
	}
	var out []string
	for _, t := range tags {
		if t != "" && !contains(out, t) {
			out = append(out, t)
		}
	}
	return out, true
}

// eachMember calls f with each member of the JSON object data (valid
// JSON) until f returns false; false if data is not an object or f said
// so.
func eachMember(data []byte, f func(key string, value json.RawMessage) bool) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return false
		}
		if !f(tok.(string), value) {
			return false
		}
	}
	return true
}

// referenceTags returns the strings of value if it is an array of
// strings, else none.
func referenceTags(value json.RawMessage) []string {
	var elems []json.RawMessage
	if value[0] != '[' || json.Unmarshal(value, &elems) != nil {
		return nil
	}
	tags := make([]string, len(elems))
	for i, e := range elems {
		if e[0] != '"' || json.Unmarshal(e, &tags[i]) != nil {
			return nil
		}
	}
	return tags
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestCheckBodyAllocatesNothingWithoutTags: the stage checks every answer
// it may store, so an answer without tags must cost no allocation.
func TestCheckBodyAllocatesNothingWithoutTags(t *testing.T) {
	body := []byte(`{"data":{"a":"b\n\u00e9","n":[1,2.5e3,{"errors":[1]}]},"errors":[],"extensions":{"apolloCacheTags":[],"x":"apolloCacheTags"}}`)
	if allocs := testing.AllocsPerRun(100, func() {
		if _, ok := CheckBody(body); !ok {
			t.Fatal("not storable")
		}
	}); allocs != 0 {
		t.Errorf("CheckBody of an answer without tags allocates %v times, want 0", allocs)
	}
}

// benchAnswer is a 1 KiB answer to a query, as a source schema sends it.
var benchAnswer = func() []byte {
	var b strings.Builder
	b.WriteString(`{"data":{"products":[`)
	for i := 0; b.Len() < 980; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"id":"product-` + string(rune('0'+i%10)) + `","name":"Chair \"Oslo\" in oak","price":129.95,"inStock":true,"tags":["wood","indoor"],"reviews":null}`)
	}
	b.WriteString(`]}}`)
	return []byte(b.String())
}()

// BenchmarkCheckBody checks a 1 KiB answer, beside json.Valid on it (a
// bound on what any check with encoding/json costs) for the ratio in one
// run.
func BenchmarkCheckBody(b *testing.B) {
	b.Run("CheckBody", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(benchAnswer)))
		for b.Loop() {
			if _, ok := CheckBody(benchAnswer); !ok {
				b.Fatal("not storable")
			}
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(benchAnswer)))
		for b.Loop() {
			if !json.Valid(benchAnswer) {
				b.Fatal("not valid")
			}
		}
	})
}
