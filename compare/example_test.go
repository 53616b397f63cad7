package compare_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/fusiongo/transport"
	"github.com/fusiongo/transport/compare"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/gateway"
)

// clientInvoker is a small transport.Invoker over an *http.Client: enough to
// stand in for either path. It forwards the gateway request headers named in
// forward and marks each request with X-Side so that a test server can
// answer the two sides differently.
type clientInvoker struct {
	name    string
	client  *http.Client
	urls    map[string]string
	forward []string
	header  http.Header // set on every request, e.g. Accept-Encoding
	fail    error       // if set, every request fails with it
}

var _ transport.Invoker = (*clientInvoker)(nil)

func (c *clientInvoker) Post(ctx context.Context, schema string, body []byte) (*http.Response, error) {
	u, ok := c.urls[schema]
	if !ok {
		return nil, fmt.Errorf("source schema %q: not configured", schema)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("source schema %q: %w", schema, err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	return c.Do(ctx, schema, req)
}

func (c *clientInvoker) Do(ctx context.Context, schema string, req *http.Request) (*http.Response, error) {
	if c.fail != nil {
		return nil, fmt.Errorf("source schema %q: %w", schema, c.fail)
	}
	req = req.Clone(ctx)
	for _, name := range c.forward {
		if v := gateway.Header(ctx).Get(name); v != "" && req.Header.Get(name) == "" {
			req.Header.Set(name, v)
		}
	}
	for name, values := range c.header {
		req.Header[name] = values
	}
	req.Header.Set("X-Side", c.name)
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("source schema %q: %w", schema, err)
	}
	return resp, nil
}

func (c *clientInvoker) Reload(env.Config) error { return errors.New("not supported") }

func (c *clientInvoker) Close() error {
	c.client.CloseIdleConnections()
	return nil
}

// noRedirects makes a client return a 3xx response as it is, as the sockets
// path does.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

func Example() {
	// A source schema that moved its reviews endpoint to /v2.
	mux := http.NewServeMux()
	mux.HandleFunc("POST /graphql", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"data":{"users":[{"id":"1"}]}}`)
	})
	mux.HandleFunc("POST /reviews", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/v2", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("POST /v2", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"data":{"top":[]}}`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	urls := map[string]string{"accounts": srv.URL + "/graphql", "reviews": srv.URL + "/reviews"}
	legacy := &clientInvoker{name: "legacy", client: &http.Client{}, urls: urls}
	sockets := &clientInvoker{name: "sockets", client: &http.Client{CheckRedirect: noRedirects}, urls: urls}
	defer legacy.Close()
	defer sockets.Close()

	corpus, err := compare.ReadCorpus(strings.NewReader(`
# one request per line
{"name":"accounts/users","schema":"accounts","body":{"query":"{ users { id } }"}}
{"name":"reviews/top","schema":"reviews","body":{"query":"{ top { id } }"}}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	report, err := compare.Run(context.Background(), corpus,
		compare.Side{Name: "legacy", Invoker: legacy},
		compare.Side{Name: "sockets", Invoker: sockets},
		compare.Options{URLs: urls})
	if err != nil {
		fmt.Println(err)
		return
	}
	report.Write(os.Stdout)
	// Output:
	// ok   accounts/users
	// DIFF reviews/top
	//      redirect: legacy followed a 307 to /v2 and got a 200; sockets returned the 307
	// 2 requests: 1 identical, 1 different
}
