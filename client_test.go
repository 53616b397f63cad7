package transport_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/testsupport/race"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// clientQuery is the body of the client tests' requests.
const clientQuery = `{"query":"{ ok }"}`

// tagged gives every source schema of cfg the header rule X-Schema: its
// name, so that a server sees which schema's rules a request went through.
func tagged(cfg env.Config) env.Config {
	for name, s := range cfg.SourceSchemas {
		s.Headers.Set = map[string]string{"X-Schema": name}
		cfg.SourceSchemas[name] = s
	}
	return cfg
}

// clientPost sends clientQuery to url with c and ctx.
func clientPost(t *testing.T, c *http.Client, ctx context.Context, url string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(clientQuery))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return c.Do(req)
}

// TestRoundTripperRoutesByHostAndLongestPrefix: two source schemas on one
// host, at /a and /a/b, and a third on another port of the same address.
// Each request reaches the server it names with the header rules of the
// schema with the same scheme, host and port and the longest prefix of its
// path in whole segments, on every invoker New returns.
func TestRoundTripperRoutesByHostAndLongestPrefix(t *testing.T) {
	runs := []struct {
		name string
		cfg  func(nameURL ...string) env.Config
	}{
		{"legacy", func(nu ...string) env.Config { return config(env.PathLegacy, nu...) }},
		{"sockets", func(nu ...string) env.Config { return config(env.PathSockets, nu...) }},
		{"mixed", func(nu ...string) env.Config {
			cfg := config(env.PathMixed, nu...)
			cfg.SocketsSchemas = []string{"inner"}
			return cfg
		}},
		{"shadow", func(nu ...string) env.Config {
			cfg := config(env.PathLegacy, nu...)
			cfg.Shadow.Rate = 1
			return cfg
		}},
		{"canary", func(nu ...string) env.Config {
			cfg := config(env.PathLegacy, nu...)
			cfg.Canary = env.CanarySettings{Rate: 0.5}
			return cfg
		}},
	}
	cases := []struct {
		path   string // on the first server, or the second with other
		other  bool
		schema string
	}{
		{path: "/a/b/x", schema: "inner"},
		{path: "/a/b", schema: "inner"},
		{path: "/a/b/", schema: "inner"},
		{path: "/a/x", schema: "outer"},
		{path: "/a", schema: "outer"},
		{path: "/a/bc", schema: "outer"}, // /a/b is no prefix of /a/bc in segments
		{path: "/a/b", other: true, schema: "other"},
	}
	for _, run := range runs {
		for _, tc := range cases {
			t.Run(run.name+tc.path+map[bool]string{true: "@other"}[tc.other], func(t *testing.T) {
				first, second := newSchemaServer(t, nil), newSchemaServer(t, nil)
				inv, err := transport.New(tagged(run.cfg(
					"outer", first.Server.URL+"/a",
					"inner", first.Server.URL+"/a/b",
					"other", second.Server.URL+"/",
				)), transport.WithLookupEnv(noEnv), transport.WithLogger(quiet))
				if err != nil {
					t.Fatal(err)
				}
				defer inv.Close()
				to, quietSrv := first, second
				if tc.other {
					to, quietSrv = second, first
				}
				resp, err := clientPost(t, inv.Client(), context.Background(), to.Server.URL+tc.path)
				if err != nil {
					t.Fatal(err)
				}
				if body := readAll(t, resp); resp.StatusCode != 200 || body != `{"data":{"ok":true}}` {
					t.Fatalf("got %d %q", resp.StatusCode, body)
				}
				inv.Close() // waits for a shadow comparison in flight
				got := to.Requests()
				if len(got) == 0 {
					t.Fatal("the server saw no request")
				}
				for _, r := range got {
					if r.Path != tc.path || r.Header.Get("X-Schema") != tc.schema {
						t.Errorf("server saw %s with X-Schema %q; want %s with the rules of %q", r.Path, r.Header.Get("X-Schema"), tc.path, tc.schema)
					}
				}
				if n := len(quietSrv.Requests()); n != 0 {
					t.Errorf("the other server saw %d requests", n)
				}
			})
		}
	}
}

// TestRoundTripperRefusesUnknownURL: a request whose URL matches no source
// schema fails with an error that names its redacted URL and wraps
// ErrUnknownSchema; no server sees a connection and the body is closed.
func TestRoundTripperRefusesUnknownURL(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			known, unknown := newSchemaServer(t, nil), newSchemaServer(t, nil)
			inv := newInvoker(t, config(path, "products", known.Server.URL+"/a"))
			rt := inv.RoundTripper()
			hostport := strings.TrimPrefix(known.Server.URL, "http://")
			for _, u := range []string{
				"http://user:secret@" + hostport + "/ab", // a prefix of the path, not of a segment
				"http://user:secret@" + hostport + "/",
				"http://user:secret@" + hostport + "/b/a",
				"https://user:secret@" + hostport + "/a", // another scheme
				"http://user:secret@" + strings.TrimPrefix(unknown.Server.URL, "http://") + "/a",
			} {
				body := &closeRecorder{ReadCloser: io.NopCloser(strings.NewReader(clientQuery))}
				req, err := http.NewRequest(http.MethodPost, u, body)
				if err != nil {
					t.Fatal(err)
				}
				resp, err := rt.RoundTrip(req)
				if err == nil {
					resp.Body.Close()
					t.Fatalf("%s: sent, want refused", u)
				}
				redacted := strings.Replace(u, "user:secret@", "", 1) // errors show no userinfo
				if !errors.Is(err, fault.ErrUnknownSchema) || !strings.Contains(err.Error(), redacted) || strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "user") {
					t.Errorf("%s: error %q; want ErrUnknownSchema naming %s", u, err, redacted)
				}
				if !body.closed.Load() {
					t.Errorf("%s: request body not closed", u)
				}
			}
			for _, srv := range []*schemaServer{known, unknown} {
				if n, c := len(srv.Requests()), len(srv.Opened()); n != 0 || c != 0 {
					t.Errorf("a server saw %d requests on %d connections; want none", n, c)
				}
			}
		})
	}
}

// TestRoundTripperRouteFollowsReload: after a Reload moves the source
// schema to another server, a request to the new URL is sent and one to
// the old URL is refused; before, the other way round.
func TestRoundTripperRouteFollowsReload(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			before, after := newSchemaServer(t, nil), newSchemaServer(t, nil)
			inv := newInvoker(t, tagged(config(path, "products", before.URL())))
			c := inv.Client()
			send := func(u string) error {
				resp, err := clientPost(t, c, context.Background(), u)
				if err == nil {
					readAll(t, resp)
				}
				return err
			}
			if err := send(before.URL()); err != nil {
				t.Fatalf("before the reload: %v", err)
			}
			if err := send(after.URL()); !errors.Is(err, fault.ErrUnknownSchema) {
				t.Fatalf("before the reload, to the new URL: %v; want ErrUnknownSchema", err)
			}
			if err := inv.Reload(tagged(config(path, "products", after.URL()))); err != nil {
				t.Fatal(err)
			}
			if err := send(after.URL()); err != nil {
				t.Fatalf("after the reload: %v", err)
			}
			if err := send(before.URL()); !errors.Is(err, fault.ErrUnknownSchema) {
				t.Fatalf("after the reload, to the old URL: %v; want ErrUnknownSchema", err)
			}
			if n := len(before.Requests()); n != 1 {
				t.Errorf("the old server saw %d requests, want 1", n)
			}
			if got := after.Requests(); len(got) != 1 || got[0].Header.Get("X-Schema") != "products" {
				t.Errorf("the new server saw %+v; want one request with products' rules", got)
			}
		})
	}
}

// TestRoundTripperContextRouteWins: the source schema named by
// WithSourceSchema is used whatever the URL says: its header rules apply
// to a URL that routes to another schema, and to a URL no schema has. On
// the sockets path Do's target check still applies: a URL on another host
// is refused with ErrWrongTarget and nothing is sent.
func TestRoundTripperContextRouteWins(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			srv, elsewhere := newSchemaServer(t, nil), newSchemaServer(t, nil)
			inv := newInvoker(t, tagged(config(path, "outer", srv.Server.URL+"/a", "inner", srv.Server.URL+"/a/b")))
			c := inv.Client()
			ctx := transport.WithSourceSchema(context.Background(), "outer")
			for _, p := range []string{"/a/b/x", "/unrouted"} {
				resp, err := clientPost(t, c, ctx, srv.Server.URL+p)
				if err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				readAll(t, resp)
				if r := srv.Last(t); r.Path != p || r.Header.Get("X-Schema") != "outer" {
					t.Errorf("server saw %s with X-Schema %q; want %s with outer's rules", r.Path, r.Header.Get("X-Schema"), p)
				}
			}
			resp, err := clientPost(t, c, ctx, elsewhere.Server.URL+"/a")
			switch path {
			case env.PathSockets, pathH1:
				if !errors.Is(err, fault.ErrWrongTarget) {
					t.Errorf("another host on sockets: %v; want ErrWrongTarget", err)
				}
				if n := len(elsewhere.Requests()); n != 0 {
					t.Errorf("the other host saw %d requests; want none", n)
				}
			default:
				if err != nil {
					t.Fatalf("another host on %s: %v", path, err)
				}
				readAll(t, resp)
				if r := elsewhere.Last(t); r.Header.Get("X-Schema") != "outer" {
					t.Errorf("the other host saw X-Schema %q; want outer's rules", r.Header.Get("X-Schema"))
				}
			}
			if _, err := clientPost(t, c, transport.WithSourceSchema(context.Background(), "nope"), srv.Server.URL+"/a"); !errors.Is(err, fault.ErrUnknownSchema) {
				t.Errorf("unknown name: %v; want ErrUnknownSchema", err)
			}
		})
	}
}

// TestClientFollowsNoRedirectTwice: a source schema redirects /a to /b.
// On legacy the path follows it once, inside itself: the server sees /a
// then /b, once each, and the client gets the final answer. On sockets
// nothing follows it: the server sees /a only and the client gets the 302.
func TestClientFollowsNoRedirectTwice(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/a" {
					http.Redirect(w, r, "/b", http.StatusFound)
					return
				}
				io.WriteString(w, "final")
			})
			inv := newInvoker(t, config(path, "products", srv.Server.URL))
			resp, err := inv.Client().Get(srv.Server.URL + "/a")
			if err != nil {
				t.Fatal(err)
			}
			body := readAll(t, resp)
			var seen []string
			for _, r := range srv.Requests() {
				seen = append(seen, r.Path)
			}
			want, status := "[/a /b]", http.StatusOK
			if onSockets(path) {
				want, status = "[/a]", http.StatusFound
			}
			if got := fmt.Sprint(seen); got != want {
				t.Errorf("server saw %s; want %s", got, want)
			}
			if resp.StatusCode != status || (status == http.StatusOK && body != "final") {
				t.Errorf("client got %d %q; want %d", resp.StatusCode, body, status)
			}
		})
	}
}

// TestClientKeepsNoCookie: a source schema sets a cookie on every answer;
// no request carries it back.
func TestClientKeepsNoCookie(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
				http.SetCookie(w, &http.Cookie{Name: "session", Value: "s1", Path: "/"})
				io.WriteString(w, `{"data":{"ok":true}}`)
			})
			inv := newInvoker(t, config(path, "products", srv.URL()))
			c := inv.Client()
			for range 2 {
				resp, err := clientPost(t, c, context.Background(), srv.URL())
				if err != nil {
					t.Fatal(err)
				}
				if readAll(t, resp); resp.Header.Get("Set-Cookie") == "" {
					t.Fatal("the server set no cookie")
				}
			}
			for i, r := range srv.Requests() {
				if v := r.Header.Values("Cookie"); len(v) != 0 {
					t.Errorf("request %d carried Cookie %q", i+1, v)
				}
			}
		})
	}
}

// TestWrappedInvokerCannotLoseRouting: routing by URL and the canary
// handler are methods of *Transport, so code that wraps the Invoker (a
// user's middleware, a test double) and asks the wrapper for them does not
// compile; it cannot end up with a client that silently fails to route, as
// NewClient(wrapped) once did. The program below is what such a user
// writes; the Go compiler must refuse it, naming the missing methods.
func TestWrappedInvokerCannotLoseRouting(t *testing.T) {
	tool := goTool(t)
	dir, err := os.MkdirTemp(".", "misuse-") // inside the module, so it builds against this tree
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	const program = `package main

import (
	"context"
	"net/http"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
)

// logged is a user's wrapper around the Invoker.
type logged struct{ transport.Invoker }

func (l logged) Post(ctx context.Context, schema string, body []byte) (*http.Response, error) {
	return l.Invoker.Post(ctx, schema, body)
}

func main() {
	t, _ := transport.New(env.Config{})
	var inv transport.Invoker = logged{t}
	_ = inv.Client()
	_ = inv.RoundTripper()
	_ = inv.CanaryHandler()
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, "build", "-o", os.DevNull, "./"+filepath.Base(dir)).CombinedOutput()
	if err == nil {
		t.Fatal("a wrapped Invoker's Client, RoundTripper and CanaryHandler compiled; want a compile error")
	}
	for _, m := range []string{"Client", "RoundTripper", "CanaryHandler"} {
		if !strings.Contains(string(out), "inv."+m+" undefined") {
			t.Errorf("the compiler's output does not refuse inv.%s:\n%s", m, out)
		}
	}
}

// TestWrappedInvokerBesideClient: the supported way to add behaviour to
// every call is WithMiddleware, which both the Invoker methods and the
// Client go through; a wrapper of the Invoker still sends what it is given.
func TestWrappedInvokerBesideClient(t *testing.T) {
	srv := newSchemaServer(t, nil)
	var seen atomic.Int64
	count := func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			seen.Add(1)
			return next.RoundTrip(r)
		})
	}
	tr := newInvoker(t, config(env.PathSockets, "products", srv.URL()), transport.WithMiddleware(count))
	wrapped := struct{ transport.Invoker }{tr}
	post(t, wrapped, context.Background(), "products")
	resp, err := clientPost(t, tr.Client(), context.Background(), srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if n, m := len(srv.Requests()), seen.Load(); n != 2 || m != 2 {
		t.Errorf("server saw %d requests, the middleware %d; want 2 and 2 (one by the wrapper's Post, one by the Client)", n, m)
	}
}

// TestRoundTripperRouteAllocatesNothing: after the first request of a
// configuration, routing by URL costs no allocation: a RoundTrip allocates
// what the Do it makes allocates. The source schema is served in process,
// so the counts hold still.
func TestRoundTripperRouteAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates")
	}
	ht := &wiretest.HandlerTransport{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
	cfg := config(env.PathSockets, "products", "http://products.test/graphql", "reviews", "http://products.test/reviews", "accounts", "http://accounts.test/")
	inv := newInvoker(t, cfg, transport.WithSchemaOptions("products", transport.SchemaOptions{RoundTripper: ht}))
	rt := inv.RoundTripper()
	req, _ := http.NewRequest(http.MethodGet, "http://products.test/graphql/x", nil)
	measure := func(send func() (*http.Response, error)) float64 {
		return testing.AllocsPerRun(1000, func() {
			resp, err := send()
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		})
	}
	do := measure(func() (*http.Response, error) { return inv.Do(req.Context(), "products", req) })
	routed := measure(func() (*http.Response, error) { return rt.RoundTrip(req) })
	if routed != do {
		t.Errorf("RoundTrip allocates %v a request, Do %v; want the same", routed, do)
	}
	if ht.Calls() == 0 {
		t.Fatal("nothing reached the source schema")
	}
}

// TestRoundTripperRefusesSharedURL: two source schemas at one URL cannot be
// told apart by it: a request to it is refused with an error naming both,
// nothing is sent, and WithSourceSchema picks one.
func TestRoundTripperRefusesSharedURL(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			srv := newSchemaServer(t, nil)
			inv := newInvoker(t, tagged(config(path, "products", srv.URL(), "reviews", srv.URL())))
			c := inv.Client()
			_, err := clientPost(t, c, context.Background(), srv.URL())
			if !errors.Is(err, fault.ErrUnknownSchema) || !strings.Contains(err.Error(), `"products"`) || !strings.Contains(err.Error(), `"reviews"`) {
				t.Errorf("error %v; want ErrUnknownSchema naming products and reviews", err)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Fatalf("server saw %d requests; want none", n)
			}
			resp, err := clientPost(t, c, transport.WithSourceSchema(context.Background(), "reviews"), srv.URL())
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			if r := srv.Last(t); r.Header.Get("X-Schema") != "reviews" {
				t.Errorf("server saw X-Schema %q; want reviews' rules", r.Header.Get("X-Schema"))
			}
		})
	}
}
