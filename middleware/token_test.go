package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/oauth2"

	"github.com/fusiongo/transport/middleware"
)

func TestToken(t *testing.T) {
	errIssuer := errors.New("issuer unreachable")
	tests := []struct {
		name      string
		src       middleware.TokenFunc
		forwarded string // Authorization the caller's request has
		want      string // Authorization the server sees
		wantErr   string // non-empty: the request fails so
	}{
		{"sets", staticToken("Bearer abc"), "", "Bearer abc", ""},
		{"overrides forwarded value", staticToken("Bearer abc"), "Bearer user", "Bearer abc", ""},
		{"oauth2 token source", middleware.FromOAuth2(oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "abc"})), "", "Bearer abc", ""},
		{"oauth2 token type", middleware.FromOAuth2(oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "abc", TokenType: "mac"})), "", "MAC abc", ""},
		{"error", func(context.Context) (string, error) { return "", errIssuer }, "Bearer user", "", "Authorization token: issuer unreachable"},
		{"empty value", staticToken(""), "", "", "Authorization token: empty Authorization value"},
		{"oauth2 error", middleware.FromOAuth2(failingSource{errIssuer}), "", "", "Authorization token: oauth2 token source: issuer unreachable"},
		{"oauth2 no access token", middleware.FromOAuth2(oauth2.StaticTokenSource(&oauth2.Token{})), "", "", "oauth2 token source: no access token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ string) {})
			req := newRequest(t, t.Context(), srv.URL, queryBody, true)
			if tt.forwarded != "" {
				req.Header.Set("Authorization", tt.forwarded)
			}
			before := req.Header.Clone()
			resp, err := middleware.Chain(srv.transport(), middleware.Token(tt.src)).RoundTrip(req)
			if diff := cmp.Diff(before, req.Header); diff != "" {
				t.Errorf("caller's request header changed (-before +after):\n%s", diff)
			}
			got := srv.received()
			if tt.wantErr != "" {
				if err == nil {
					readBody(t, resp)
					t.Fatal("RoundTrip succeeded, want an error")
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %q does not contain %q", err, tt.wantErr)
				}
				if len(got) != 0 {
					t.Errorf("server saw %d requests, want none", len(got))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			readBody(t, resp)
			if len(got) != 1 {
				t.Fatalf("server saw %d requests, want 1", len(got))
			}
			if v := got[0].Header.Values("Authorization"); len(v) != 1 || v[0] != tt.want {
				t.Errorf("server saw Authorization %q, want [%q]", v, tt.want)
			}
		})
	}
}

func staticToken(v string) middleware.TokenFunc {
	return func(context.Context) (string, error) { return v, nil }
}

type failingSource struct{ err error }

func (s failingSource) Token() (*oauth2.Token, error) { return nil, s.err }

// TestTokenPerAttempt checks the intended order, Retry outside Token: each
// attempt asks for the token again, with the request's context.
func TestTokenPerAttempt(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ string) {
		if n < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	type ctxKey struct{}
	var calls atomic.Int32
	src := func(ctx context.Context) (string, error) {
		if ctx.Value(ctxKey{}) != "caller" {
			return "", errors.New("not the request's context")
		}
		return fmt.Sprintf("Bearer %d", calls.Add(1)), nil
	}
	rt := middleware.Chain(srv.transport(), middleware.Retry(fastRetry(3)), middleware.Token(src))
	resp, err := rt.RoundTrip(newRequest(t, context.WithValue(t.Context(), ctxKey{}, "caller"), srv.URL, queryBody, false))
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	var got []string
	for _, r := range srv.received() {
		got = append(got, r.Header.Get("Authorization"))
	}
	if diff := cmp.Diff([]string{"Bearer 1", "Bearer 2", "Bearer 3"}, got); diff != "" {
		t.Errorf("Authorization per attempt mismatch (-want +got):\n%s", diff)
	}
}

func TestTokenNil(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Token(nil) did not panic")
		}
	}()
	middleware.Token(nil)
}
