package middleware

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"golang.org/x/oauth2"

	"github.com/fusiongo/transport/internal/redact"
)

// TokenFunc returns the whole Authorization header value for a source
// schema request, scheme included ("Bearer abc"). It is called with the
// request's context for every request that Token sends (for every attempt
// and hedge when Token sits inside Retry and Hedge), and, under a
// transport.Invoker with dedupe on, once more per query for dedupe's key
// (IsKeyProbe), so it should cache: a function that fetches a token each
// time fetches it per attempt. It must be safe for concurrent use.
type TokenFunc func(ctx context.Context) (string, error)

// Token returns a middleware that sets the Authorization header of every
// request to the value that src returns. The header is set on a copy of the
// request; the caller's request is never modified. The value replaces any
// Authorization the request had, a value forwarded from the gateway request
// included: the source schema sees the gateway's own credentials. If src
// fails, or returns an empty value, the request is not sent and fails with
// an error that says the token did. Token panics if src is nil.
//
// Token belongs inside Retry and Hedge, so that every attempt carries a
// token fetched for it, and inside Breaker and RateLimiter, so that an
// attempt they refuse fetches none (see Order in the package doc). Under a
// transport.Invoker that place is transport.SchemaOptions.AttemptMiddleware;
// in SchemaOptions.Middleware or transport.WithMiddleware, which run once
// per call outside the built-in retry, every attempt of a call carries the
// same token.
func Token(src TokenFunc) Middleware {
	if src == nil {
		panic("middleware.Token: nil TokenFunc")
	}
	return func(next http.RoundTripper) http.RoundTripper {
		return &tokenSetter{wrapped: wrap(next), src: src}
	}
}

// tokenSetter is the RoundTripper of Token.
type tokenSetter struct {
	wrapped
	src TokenFunc
}

var _ http.RoundTripper = (*tokenSetter)(nil)

// errEmptyToken is the cause of a request whose TokenFunc returned "".
var errEmptyToken = errors.New("empty Authorization value")

// RoundTrip sends a copy of req with the Authorization header set.
func (t *tokenSetter) RoundTrip(req *http.Request) (*http.Response, error) {
	v, err := t.src(req.Context())
	if err == nil && v == "" {
		err = errEmptyToken
	}
	if err != nil {
		closeBody(req)
		return nil, fmt.Errorf("%s %s: Authorization token: %w", req.Method, redact.Request(req.URL), err)
	}
	out := *req
	out.Header = req.Header.Clone()
	if out.Header == nil {
		out.Header = make(http.Header, 1)
	}
	out.Header["Authorization"] = []string{v}
	return t.next.RoundTrip(&out)
}

// FromOAuth2 returns a TokenFunc that takes tokens from ts as "<type>
// <access token>", the value oauth2.Transport sets. ts.Token has no context,
// so the request's context does not bound it. Wrap ts in
// oauth2.ReuseTokenSource to fetch a token only when the last one expires.
func FromOAuth2(ts oauth2.TokenSource) TokenFunc {
	return func(context.Context) (string, error) {
		tok, err := ts.Token()
		if err != nil {
			return "", fmt.Errorf("oauth2 token source: %w", err)
		}
		if tok == nil || tok.AccessToken == "" {
			return "", errors.New("oauth2 token source: no access token")
		}
		return tok.Type() + " " + tok.AccessToken, nil
	}
}
