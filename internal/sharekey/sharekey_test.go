package sharekey

import (
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/fusiongo/transport/internal/testsupport/race"
)

// keyedURLFields are the fields of url.URL that appendURL keys.
var keyedURLFields = []string{"Scheme", "Opaque", "User", "Host", "Path", "Fragment", "RawQuery", "RawPath", "RawFragment", "ForceQuery", "OmitHost"}

// TestKeyURLFields: the key covers every field of url.URL, so that a Go
// release that adds one (and writes it in String) fails here before two
// URLs sent apart could key alike.
func TestKeyURLFields(t *testing.T) {
	typ := reflect.TypeFor[url.URL]()
	var fields []string
	for f := range typ.Fields() {
		fields = append(fields, f.Name)
	}
	slices.Sort(fields)
	want := slices.Sorted(slices.Values(keyedURLFields))
	if !slices.Equal(fields, want) {
		t.Fatalf("url.URL has fields %v; the key covers %v", fields, want)
	}
}

// longValue is most of the value of a header of request: longer than
// what Of gathers before it hashes, so that a difference past it shows.
var longValue = strings.Repeat("x", 3*flushAt)

// request is the base request of the key tests: a Post with headers, one
// of them long and sorted before another.
func request(t *testing.T) (*http.Request, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://products.test/graphql?v=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = http.Header{
		"Content-Type":  {"application/json"},
		"Authorization": {"Bearer a"},
		"X-Role":        {"a", "b"},
		"X-Long":        {longValue + "0"},
		"Traceparent":   {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
	}
	return req, []byte(`{"query":"{ a }"}`)
}

// TestKeyParts: two requests key alike only if what the source schema
// would receive is alike; the per-call headers are left out.
func TestKeyParts(t *testing.T) {
	tests := []struct {
		name string
		edit func(*http.Request, *[]byte)
		same bool
	}{
		{"equal", func(*http.Request, *[]byte) {}, true},
		{"a trace header differs", func(r *http.Request, _ *[]byte) { r.Header["Traceparent"] = []string{"other"} }, true},
		{"a trace header in another case", func(r *http.Request, _ *[]byte) { r.Header["x-request-id"] = []string{"r2"} }, true},
		{"method", func(r *http.Request, _ *[]byte) { r.Method = http.MethodGet }, false},
		{"Host", func(r *http.Request, _ *[]byte) { r.Host = "other.test" }, false},
		{"body", func(_ *http.Request, b *[]byte) { *b = []byte(`{"query":"{ b }"}`) }, false},
		{"no body", func(_ *http.Request, b *[]byte) { *b = nil }, false},
		{"Authorization", func(r *http.Request, _ *[]byte) { r.Header.Set("Authorization", "Bearer b") }, false},
		{"values in order", func(r *http.Request, _ *[]byte) { r.Header["X-Role"] = []string{"b", "a"} }, false},
		{"names and values apart", func(r *http.Request, _ *[]byte) { r.Header["X-Rol"] = []string{"ea"}; delete(r.Header, "X-Role") }, false},
		{"a header more", func(r *http.Request, _ *[]byte) { r.Header.Set("X-Tenant", "a") }, false},
		{"a name in another case", func(r *http.Request, _ *[]byte) { r.Header["x-role"] = r.Header["X-Role"]; delete(r.Header, "X-Role") }, false},
		{"a long header's last byte", func(r *http.Request, _ *[]byte) { r.Header.Set("X-Long", longValue+"1") }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, abody := request(t)
			b, bbody := request(t)
			tt.edit(b, &bbody)
			if same := Of(a, abody) == Of(b, bbody); same != tt.same {
				t.Errorf("keys equal: %t, want %t", same, tt.same)
			}
		})
	}
}

// TestKeyURL: two URLs that are sent apart (their String differs) key
// apart, whichever field of url.URL tells them apart.
func TestKeyURL(t *testing.T) {
	tests := []struct {
		name       string
		base, edit func(*url.URL) // base: to both URLs, so that only edit tells them apart
	}{
		{"Scheme", nil, func(u *url.URL) { u.Scheme = "https" }},
		{"Opaque", nil, func(u *url.URL) { u.Opaque = "opaque" }},
		{"User", nil, func(u *url.URL) { u.User = url.User("alice") }},
		{"User's password", func(u *url.URL) { u.User = url.User("alice") }, func(u *url.URL) { u.User = url.UserPassword("alice", "") }},
		{"Host", nil, func(u *url.URL) { u.Host = "other.test" }},
		{"Path", nil, func(u *url.URL) { u.Path = "/other" }},
		{"RawPath", nil, func(u *url.URL) { u.RawPath = "/graph%71l" }},
		{"RawQuery", nil, func(u *url.URL) { u.RawQuery = "v=2" }},
		{"Fragment", nil, func(u *url.URL) { u.Fragment = "f" }},
		{"RawFragment", func(u *url.URL) { u.Fragment = "a" }, func(u *url.URL) { u.RawFragment = "%61" }},
		{"ForceQuery", func(u *url.URL) { u.RawQuery = "" }, func(u *url.URL) { u.ForceQuery = true }},
		{"OmitHost", func(u *url.URL) { u.Host = "" }, func(u *url.URL) { u.OmitHost = true }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, body := request(t)
			b, _ := request(t)
			if tt.base != nil {
				tt.base(a.URL)
				tt.base(b.URL)
			}
			tt.edit(b.URL)
			if a.URL.String() == b.URL.String() {
				t.Fatalf("both URLs are %s: the case tells nothing apart", a.URL)
			}
			if Of(a, body) == Of(b, body) {
				t.Errorf("%s and %s key alike", a.URL, b.URL)
			}
		})
	}
}

// TestKeyAllocs: keying a request costs no allocation, whatever its
// URL and headers (the digest and scratch are pooled).
func TestKeyAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates, and drops pooled items")
	}
	req, body := request(t)
	req.URL.User = url.UserPassword("u", "p")
	if allocs := testing.AllocsPerRun(1000, func() { Of(req, body) }); allocs != 0 {
		t.Errorf("Of allocates %v a call, want 0", allocs)
	}
}
