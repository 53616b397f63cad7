package transport_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fusiongo/transport/env"
)

// TestCacheInvalidationHandler: the handler refuses every request unless a
// token is configured and the request bears it; a good request removes the
// entries it names (the next call is sent) and says how many.
func TestCacheInvalidationHandler(t *testing.T) {
	const token = "s3cret-token"
	tests := []struct {
		name      string
		token     string // configured
		method    string
		auth      string
		body      string
		code      int
		inBody    string
		invalided bool // the entry is gone after
	}{
		{"no token configured", "", "POST", "Bearer " + token, `{"source_schema":"products"}`, 403, "invalidation_token is not set", false},
		{"no Authorization", token, "POST", "", `{"source_schema":"products"}`, 401, "bearer token", false},
		{"wrong token", token, "POST", "Bearer nope", `{"source_schema":"products"}`, 401, "bearer token", false},
		{"token as Basic", token, "POST", "Basic " + token, `{"source_schema":"products"}`, 401, "bearer token", false},
		{"a prefix of the token", token, "POST", "Bearer s3cret", `{"source_schema":"products"}`, 401, "bearer token", false},
		{"GET", token, "GET", "Bearer " + token, ``, 405, "POST", false},
		{"malformed", token, "POST", "Bearer " + token, `{"source_schema":`, 400, "body", false},
		{"unknown field", token, "POST", "Bearer " + token, `{"schema":"products"}`, 400, "unknown field", false},
		{"no schema", token, "POST", "Bearer " + token, `{"tags":["a"]}`, 400, "source_schema missing", false},
		{"unknown schema", token, "POST", "Bearer " + token, `{"source_schema":"nope"}`, 404, `source schema \"nope\": unknown`, false},
		{"a tag it has not", token, "POST", "Bearer " + token, `{"source_schema":"products","tags":["other"]}`, 200, `{"removed":0,"items":[0]}`, false},
		{"the schema", token, "POST", "Bearer " + token, `{"source_schema":"products"}`, 200, `{"removed":1,"items":[1]}`, true},
		{"an array", token, "POST", "Bearer " + token, `[{"source_schema":"products","tags":["other"]},{"source_schema":"products"}]`, 200, `{"removed":1,"items":[0,1]}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newCacheServer(t, cacheControl("max-age=60"))
			cfg := cachedConfig(env.PathSockets, s.URL, nil)
			cfg.ResponseCache.InvalidationToken = tt.token
			inv := newInvoker(t, cfg)
			postBody(t, inv, context.Background(), cacheQuery)
			req := httptest.NewRequest(tt.method, "/invalidate", strings.NewReader(tt.body))
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			rec := httptest.NewRecorder()
			inv.CacheInvalidationHandler().ServeHTTP(rec, req)
			body, _ := io.ReadAll(rec.Body)
			if rec.Code != tt.code || !strings.Contains(string(body), tt.inBody) {
				t.Fatalf("answer %d %s, want %d with %q", rec.Code, body, tt.code, tt.inBody)
			}
			if tt.token != "" && strings.Contains(string(body), tt.token) {
				t.Errorf("the answer shows the token: %s", body)
			}
			postBody(t, inv, context.Background(), cacheQuery)
			want := int64(1)
			if tt.invalided {
				want = 2
			}
			if n := s.requests(); n != want {
				t.Errorf("the source schema got %d requests, want %d", n, want)
			}
			if rec.Code == http.StatusUnauthorized && rec.Header().Get("WWW-Authenticate") == "" {
				t.Error("a 401 without WWW-Authenticate")
			}
		})
	}
}
