package middleware_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"

	"github.com/fusiongo/transport/middleware"
)

// ExampleChain builds a source schema's pipeline in the intended order and
// sends a query to a source schema that is busy at first.
func ExampleChain() {
	var attempts atomic.Int32
	products := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if attempts.Add(1) == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, `{"data":{"auth":%q}}`, r.Header.Get("Authorization"))
	}))
	defer products.Close()

	rt := middleware.Chain(products.Client().Transport,
		middleware.RequestLog(slog.New(slog.DiscardHandler), "products"),
		middleware.Dedupe(),
		middleware.Retry(middleware.RetryConfig{MaxAttempts: 3, WaitMin: time.Millisecond, WaitMax: 10 * time.Millisecond}),
		middleware.Token(func(context.Context) (string, error) { return "Bearer gateway", nil }),
	)
	client := &http.Client{Transport: rt}
	resp, err := client.Post(products.URL, "application/json", strings.NewReader(`{"query":"{ me { name } }"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body), "after", attempts.Load(), "attempts")
	// Output:
	// 200 {"data":{"auth":"Bearer gateway"}} after 2 attempts
}

// ExampleRequestLog shows the record of one request; time and duration are
// left out to keep the output stable.
func ExampleRequestLog() {
	h := slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "duration" {
				return slog.Attr{}
			}
			return a
		},
	})
	ok := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
	})
	rt := middleware.Chain(ok, middleware.RequestLog(slog.New(h), "products"))

	req, _ := http.NewRequest(http.MethodGet, "http://products.internal/graphql?query=%7Bme%7D", nil)
	req.Header.Set("Authorization", "Bearer secret")
	resp, err := rt.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
	}
	// Output:
	// level=DEBUG msg="source schema request" source_schema=products method=GET url=http://products.internal/graphql status=200
}

// ExampleFromOAuth2 takes the gateway's credentials for a source schema
// from an OAuth 2 token source, such as clientcredentials.Config's.
func ExampleFromOAuth2() {
	ts := oauth2.ReuseTokenSource(nil, oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "abc", TokenType: "bearer"}))
	show := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		fmt.Println("Authorization:", req.Header.Get("Authorization"))
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
	})
	rt := middleware.Chain(show, middleware.Token(middleware.FromOAuth2(ts)))

	req, _ := http.NewRequest(http.MethodPost, "http://products.internal/graphql", strings.NewReader(`{"query":"{ me { name } }"}`))
	req.Header.Set("Authorization", "Bearer forwarded-from-the-user")
	resp, err := rt.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
	}
	// Output:
	// Authorization: Bearer abc
}

// ExampleDedupe shares identical queries in flight. Every header but the
// trace context is in the key: two tenants or users never share an answer.
func ExampleDedupe() {
	rt := middleware.Chain(http.DefaultTransport, middleware.Dedupe())
	_ = &http.Client{Transport: rt}
}

// markHedges is a RoundTripper inside Hedge that tells the source schema
// which requests are hedges.
type markHedges struct{ next http.RoundTripper }

func (m markHedges) RoundTrip(req *http.Request) (*http.Response, error) {
	if middleware.IsHedge(req.Context()) {
		req = req.Clone(req.Context()) // a RoundTripper must not change its caller's request
		req.Header.Set("X-Hedge", "1")
	}
	return m.next.RoundTrip(req)
}

// ExampleIsHedge marks each hedge for the source schema, which here holds
// a query's first attempt until the client gives up on it, so that the
// hedge, sent after 5ms, answers.
func ExampleIsHedge() {
	products := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // read to its end, the server watches for the client's close
		if r.Header.Get("X-Hedge") == "" {
			<-r.Context().Done() // the hedge won: its first attempt was cancelled
			return
		}
		io.WriteString(w, `{"data":{"from":"the hedge"}}`)
	}))
	defer products.Close()

	rt := middleware.Chain(products.Client().Transport,
		middleware.Hedge(middleware.HedgeConfig{Delay: 5 * time.Millisecond}),
		func(next http.RoundTripper) http.RoundTripper { return markHedges{next} },
	)
	client := &http.Client{Transport: rt}
	resp, err := client.Post(products.URL, "application/json", strings.NewReader(`{"query":"{ me { name } }"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(string(body))
	// Output:
	// {"data":{"from":"the hedge"}}
}
