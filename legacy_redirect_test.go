package transport_test

import (
	"context"
	"io"
	"maps"
	"net"
	"net/http"
	"strings"
	"testing"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/middleware"
)

// The credentials a middleware adds in TestLegacyRedirectWithholdsCredentials:
// a token (middleware.Token) and a cookie.
const (
	redirectToken  = "Bearer attempt-token"
	redirectCookie = "session=s3cret"
)

// setCookie is a middleware that sets the Cookie header on a copy of each
// request, as a session middleware would.
func setCookie(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		out := *req
		out.Header = req.Header.Clone()
		out.Header.Set("Cookie", redirectCookie)
		return next.RoundTrip(&out)
	})
}

// redirectHops is one redirect chain of TestLegacyRedirectWithholdsCredentials:
// the source schema (first, at 127.0.0.1) answers its URL with a 307 to
// where(first, second), and second answers with a 307 to back(first) when
// back is set. Every other request is answered 200.
type redirectHops struct {
	name  string
	where func(first, second string) string // first's and second's base URLs
	back  bool                              // second sends the chain back to first's /back
	// want says, per server ("first", "second"), whether the requests after
	// the first hop carried the credentials: what net/http's Client decides
	// (client.go, shouldCopyHeaderOnRedirect), which the test checks too.
	want map[string]bool
}

var redirectChains = []redirectHops{
	{"same host", func(first, _ string) string { return first + "/elsewhere" }, false, map[string]bool{"first": true}},
	{"another host", func(_, second string) string { return second + "/graphql" }, false, map[string]bool{"second": false}},
	// net/http compares host names, not ports: another port of the same
	// host name gets the credentials.
	{"another port of the same host name", func(_, second string) string {
		return strings.Replace(second, "localhost", "127.0.0.1", 1) + "/graphql"
	}, false, map[string]bool{"second": true}},
	// Once a hop left, none after it carries them, back home included.
	{"away and back", func(_, second string) string { return second + "/graphql" }, true, map[string]bool{"second": false, "first": false}},
}

// startRedirectChain starts the two servers of c: first on 127.0.0.1,
// second on another port, named by its URL as localhost, which net/http
// takes for another host than 127.0.0.1.
func startRedirectChain(t *testing.T, c redirectHops) (first, second *schemaServer) {
	t.Helper()
	var firstBase, secondBase string
	first = newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/graphql" {
			http.Redirect(w, r, c.where(firstBase, secondBase), http.StatusTemporaryRedirect)
			return
		}
		io.WriteString(w, `{"data":{"ok":true}}`)
	})
	second = newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
		if c.back {
			http.Redirect(w, r, firstBase+"/back", http.StatusTemporaryRedirect)
			return
		}
		io.WriteString(w, `{"data":{"ok":true}}`)
	})
	firstBase = first.Server.URL
	_, port, err := net.SplitHostPort(second.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	secondBase = "http://localhost:" + port
	return first, second
}

// credentialsAfterFirstHop reports, per server, whether every request
// after the chain's first carried both credentials ("yes"), neither
// ("no"), or some mix ("mixed"); a server that saw no such request is
// absent.
func credentialsAfterFirstHop(first, second *schemaServer) map[string]string {
	out := map[string]string{}
	for name, reqs := range map[string][]wireRequest{"first": first.Requests()[1:], "second": second.Requests()} {
		for _, r := range reqs {
			v := "mixed"
			switch auth, cookie := r.Header.Get("Authorization") == redirectToken, r.Header.Get("Cookie") == redirectCookie; {
			case auth && cookie:
				v = "yes"
			case !auth && !cookie && r.Header.Get("Authorization") == "" && r.Header.Get("Cookie") == "":
				v = "no"
			}
			if prev, ok := out[name]; ok && prev != v {
				v = "mixed"
			}
			out[name] = v
		}
	}
	return out
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// TestLegacyRedirectWithholdsCredentials: on the legacy path, whose
// http.Client runs the whole pipeline on every redirect hop, a credential
// that a middleware adds (middleware.Token's Authorization, a Cookie) in
// any of the three middleware places reaches the hops that net/http's
// Client would send the caller's own credentials to, and no other: not
// another host, and no hop after one went to another host. The same chain
// through a bare http.Client, with the credentials set on the caller's
// request, is the oracle.
func TestLegacyRedirectWithholdsCredentials(t *testing.T) {
	mws := []func(http.RoundTripper) http.RoundTripper{middleware.Token(func(context.Context) (string, error) { return redirectToken, nil }), setCookie}
	places := []struct {
		name string
		opts []transport.Option
	}{
		{"WithMiddleware", []transport.Option{transport.WithMiddleware(mws...)}},
		{"SchemaOptions.Middleware", []transport.Option{transport.WithSchemaOptions("products", transport.SchemaOptions{Middleware: mws})}},
		{"SchemaOptions.AttemptMiddleware", []transport.Option{transport.WithSchemaOptions("products", transport.SchemaOptions{AttemptMiddleware: mws})}},
	}
	for _, c := range redirectChains {
		t.Run(c.name, func(t *testing.T) {
			want := map[string]string{}
			for server, w := range c.want {
				want[server] = yesNo(w)
			}
			// The oracle: net/http's Client with the credentials on the
			// caller's request.
			first, second := startRedirectChain(t, c)
			req, err := http.NewRequest(http.MethodPost, first.URL(), strings.NewReader(`{"query":"{ ok }"}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", redirectToken)
			req.Header.Set("Cookie", redirectCookie)
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			if got := credentialsAfterFirstHop(first, second); !maps.Equal(got, want) {
				t.Fatalf("net/http's Client sent credentials after the first hop as %v; the case expects %v", got, want)
			}

			for _, p := range places {
				t.Run(p.name, func(t *testing.T) {
					first, second := startRedirectChain(t, c)
					inv := newInvoker(t, config(env.PathLegacy, "products", first.URL()), p.opts...)
					resp, body := post(t, inv, context.Background(), "products")
					if resp.StatusCode != http.StatusOK || body != `{"data":{"ok":true}}` {
						t.Fatalf("caller got %d %q, want the redirects followed", resp.StatusCode, body)
					}
					if h := first.Requests()[0].Header; h.Get("Authorization") != redirectToken || h.Get("Cookie") != redirectCookie {
						t.Errorf("the first hop carried Authorization %q, Cookie %q; want the middleware's", h.Get("Authorization"), h.Get("Cookie"))
					}
					if got := credentialsAfterFirstHop(first, second); !maps.Equal(got, want) {
						t.Errorf("credentials after the first hop, by server: %v; want %v, as net/http sends the caller's own", got, want)
					}
				})
			}
		})
	}
}
