package sharekey

import (
	"net/http"
	"testing"
)

// TestCacheKeys: the response cache's identity key is Of's but for the
// request's cache directives, and its shared key holds the named headers
// alone, in any case; no two purposes' keys meet.
func TestCacheKeys(t *testing.T) {
	names := []string{"Authorization", "X-Tenant"}
	tests := []struct {
		name                 string
		edit                 func(*http.Request, *[]byte)
		sameCache, sameShare bool
	}{
		{"equal", func(*http.Request, *[]byte) {}, true, true},
		{"Cache-Control", func(r *http.Request, _ *[]byte) { r.Header.Set("Cache-Control", "no-cache") }, true, true},
		{"pragma in lower case", func(r *http.Request, _ *[]byte) { r.Header["pragma"] = []string{"no-cache"} }, true, true},
		{"a trace header", func(r *http.Request, _ *[]byte) { r.Header.Set("Traceparent", "other") }, true, true},
		{"a header not named", func(r *http.Request, _ *[]byte) { r.Header.Set("X-Role", "c") }, false, true},
		{"a named header", func(r *http.Request, _ *[]byte) { r.Header.Set("Authorization", "Bearer b") }, false, false},
		{"a named header added", func(r *http.Request, _ *[]byte) { r.Header.Set("X-Tenant", "t") }, false, false},
		{"a named header in lower case", func(r *http.Request, _ *[]byte) {
			r.Header["authorization"] = r.Header["Authorization"]
			delete(r.Header, "Authorization")
		}, false, true},
		{"a named header's value moved to another name", func(r *http.Request, _ *[]byte) {
			r.Header["X-Tenant"] = r.Header["Authorization"]
			delete(r.Header, "Authorization")
		}, false, false},
		{"body", func(_ *http.Request, b *[]byte) { *b = []byte(`{"query":"{ b }"}`) }, false, false},
		{"URL", func(r *http.Request, _ *[]byte) { r.URL.RawQuery = "v=2" }, false, false},
		{"Host", func(r *http.Request, _ *[]byte) { r.Host = "other.test" }, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, abody := request(t)
			b, bbody := request(t)
			tt.edit(b, &bbody)
			if same := ForCache(a, abody) == ForCache(b, bbody); same != tt.sameCache {
				t.Errorf("ForCache keys equal: %t, want %t", same, tt.sameCache)
			}
			if same := Shared(a, abody, names) == Shared(b, bbody, names); same != tt.sameShare {
				t.Errorf("Shared keys equal: %t, want %t", same, tt.sameShare)
			}
		})
	}
	t.Run("purposes apart", func(t *testing.T) {
		req, body := request(t)
		req.Header = http.Header{}
		keys := map[Key]string{Of(req, body): "Of", ForCache(req, body): "ForCache", Shared(req, body, nil): "Shared"}
		if len(keys) != 3 {
			t.Errorf("a request without headers keys alike for two purposes: %v", keys)
		}
	})
	t.Run("named lists apart", func(t *testing.T) {
		req, body := request(t)
		req.Header = http.Header{"A": {"1"}}
		if Shared(req, body, []string{"A"}) == Shared(req, body, []string{"A", "B"}) {
			t.Error("a list with a name more keys alike, though the entry would vary on B")
		}
	})
}
