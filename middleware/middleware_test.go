package middleware_test

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fusiongo/transport/middleware"
)

// named returns a middleware that records name on the way in and out.
func named(name string, trace *[]string) middleware.Middleware {
	return func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			*trace = append(*trace, "> "+name)
			resp, err := next.RoundTrip(req)
			*trace = append(*trace, "< "+name)
			return resp, err
		})
	}
}

func TestChain(t *testing.T) {
	var trace []string
	end := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		trace = append(trace, "transport")
		resp, _ := fakeResponse(req, 200, "")
		return resp, nil
	})
	rt := middleware.Chain(end, named("a", &trace), nil, named("b", &trace), named("c", &trace))
	resp, err := rt.RoundTrip(newRequest(t, t.Context(), "http://products.internal/graphql", queryBody, true))
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	want := []string{"> a", "> b", "> c", "transport", "< c", "< b", "< a"}
	if diff := cmp.Diff(want, trace); diff != "" {
		t.Errorf("order mismatch (-want +got):\n%s", diff)
	}
}

func TestChainDefaults(t *testing.T) {
	if got := middleware.Chain(nil); got != http.DefaultTransport {
		t.Errorf("Chain(nil) = %v, want http.DefaultTransport", got)
	}
	end := &closer{}
	if got := middleware.Chain(end, nil, nil); got != end {
		t.Errorf("Chain with only nil middleware = %v, want the transport", got)
	}
}

// closer is a transport that counts CloseIdleConnections calls.
type closer struct {
	http.RoundTripper
	closed int
}

func (c *closer) CloseIdleConnections() { c.closed++ }

// TestCloseIdleConnections checks that every middleware passes
// CloseIdleConnections on, so that http.Client and pool cleanups still
// reach the transport.
func TestCloseIdleConnections(t *testing.T) {
	tests := []struct {
		name string
		mw   middleware.Middleware
	}{
		{"RequestLog", middleware.RequestLog(nil, "products")},
		{"Dedupe", middleware.Dedupe()},
		{"Retry", middleware.Retry(fastRetry(3))},
		{"Retry off", middleware.Retry(middleware.RetryConfig{})},
		{"Token", middleware.Token(staticToken("Bearer abc"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			end := &closer{}
			c := &http.Client{Transport: middleware.Chain(end, tt.mw)}
			c.CloseIdleConnections()
			if end.closed != 1 {
				t.Errorf("transport's CloseIdleConnections called %d times, want 1", end.closed)
			}
		})
	}
}
