package transport_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
)

// TestSwitchSelectsPath loads the configuration with each value of
// FUSION_SOCKETS_TRANSPORT and watches which path answers: the legacy path
// follows a redirect, the sockets path returns it.
func TestSwitchSelectsPath(t *testing.T) {
	target := newSchemaServer(t, nil)
	redirecting := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL(), http.StatusFound)
	})
	for _, tc := range []struct {
		value  string
		set    bool
		status int
	}{
		{set: false, status: http.StatusOK},
		{value: "", set: true, status: http.StatusOK},
		{value: "0", set: true, status: http.StatusOK},
		{value: "false", set: true, status: http.StatusOK},
		{value: "off", set: true, status: http.StatusOK},
		{value: "1", set: true, status: http.StatusFound},
		{value: "true", set: true, status: http.StatusFound},
		{value: "on", set: true, status: http.StatusFound},
	} {
		t.Run("value="+tc.value, func(t *testing.T) {
			cfg, err := env.Loader{LookupEnv: func(k string) (string, bool) {
				if k == env.SwitchVar && tc.set {
					return tc.value, true
				}
				return "", false
			}}.Load()
			if err != nil {
				t.Fatal(err)
			}
			cfg.SourceSchemas = map[string]env.SourceSchema{"products": {URL: redirecting.URL()}}
			inv := newInvoker(t, cfg)
			resp, _ := post(t, inv, context.Background(), "products")
			if resp.StatusCode != tc.status {
				t.Errorf("status = %d, want %d", resp.StatusCode, tc.status)
			}
		})
	}
}

func TestSwitchRejectsUnknownValue(t *testing.T) {
	_, err := env.Loader{LookupEnv: func(k string) (string, bool) {
		if k == env.SwitchVar {
			return "yes please", true
		}
		return "", false
	}}.Load()
	if err == nil {
		t.Fatal("Load accepted an unknown switch value")
	}
	for _, want := range []string{"FUSION_SOCKETS_TRANSPORT", `"yes please"`, "1, true, on", "0, false, off"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

// TestPostWireFormat checks what the source schema receives from Post.
func TestPostWireFormat(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			srv := newSchemaServer(t, nil)
			inv := newInvoker(t, config(path, "products", srv.URL()))
			body := `{"query":"query($upc:String!){ product(upc:$upc){ name } }","variables":{"upc":"1"}}`
			resp, err := inv.Post(context.Background(), "products", []byte(body))
			if err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, resp); got != `{"data":{"ok":true}}` {
				t.Errorf("caller got body %q", got)
			}
			got := srv.Last(t)
			if got.Method != "POST" || got.Path != "/graphql" || got.Body != body {
				t.Errorf("schema got %s %s %q", got.Method, got.Path, got.Body)
			}
			want := map[string]string{
				"Content-Type":   "application/json; charset=utf-8",
				"Accept":         "application/graphql-response+json; charset=utf-8, application/json; charset=utf-8",
				"Content-Length": strconv.Itoa(len(body)),
			}
			for k, v := range want {
				if g := got.Header.Get(k); g != v {
					t.Errorf("%s = %q, want %q", k, g, v)
				}
			}
		})
	}
}

// sendPaths are the two ways of sending: Post, and Do with a request the
// caller built (carrying callerHeader, if any).
var sendPaths = []struct {
	name string
	send func(inv transport.Invoker, ctx context.Context, url string, callerHeader http.Header) (*http.Response, error)
}{
	{"Post", func(inv transport.Invoker, ctx context.Context, _ string, _ http.Header) (*http.Response, error) {
		return inv.Post(ctx, "products", []byte(`{"query":"{ ok }"}`))
	}},
	{"Do", func(inv transport.Invoker, ctx context.Context, url string, h http.Header) (*http.Response, error) {
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{"query":"{ ok }"}`))
		for k, v := range h {
			req.Header[k] = v
		}
		before := req.Header.Clone()
		resp, err := inv.Do(ctx, "products", req)
		if diff := cmp.Diff(before, req.Header); diff != "" {
			return nil, errors.New("Do modified the caller's request headers: " + diff)
		}
		return resp, err
	}},
}

// TestHeaderForwarding runs the forwarding rules on both paths and both
// send paths, and checks what the source schema received.
func TestHeaderForwarding(t *testing.T) {
	gateway := []string{
		"Authorization", "Bearer user-1",
		"X-Request-Id", "req-42",
		"X-Tenant", "acme",
		"X-Unlisted", "secret",
		"Cookie", "session=abc",
		"Connection", "X-Conn-Named",
		"X-Conn-Named", "hop",
		"Keep-Alive", "timeout=5",
		"Te", "trailers",
		"Upgrade", "websocket",
		"Proxy-Authorization", "Basic eA==",
		"Host", "gateway.internal",
	}
	for _, path := range paths {
		for _, sp := range sendPaths {
			t.Run(string(path)+"/"+sp.name, func(t *testing.T) {
				srv := newSchemaServer(t, nil)
				cfg := config(path, "products", srv.URL())
				// Every hop-by-hop name and Host is listed, and must still not pass.
				cfg.ForwardHeaders = []string{"authorization", "X-Request-Id", "X-Conn-Named", "Connection", "Keep-Alive", "TE", "Upgrade", "Proxy-Authorization", "Host", "Transfer-Encoding", "Trailer"}
				s := cfg.SourceSchemas["products"]
				s.ForwardHeaders = []string{"X-Tenant"}
				cfg.SourceSchemas["products"] = s
				inv := newInvoker(t, cfg)
				resp, err := sp.send(inv, gatewayCtx(gateway...), srv.URL(), nil)
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				got := srv.Last(t)
				for k, v := range map[string]string{"Authorization": "Bearer user-1", "X-Request-Id": "req-42", "X-Tenant": "acme"} {
					if g := got.Header.Get(k); g != v {
						t.Errorf("forwarded %s = %q, want %q", k, g, v)
					}
				}
				for _, k := range []string{"X-Unlisted", "Cookie", "X-Conn-Named", "Keep-Alive", "Te", "Upgrade", "Proxy-Authorization"} {
					if g, ok := got.Header[k]; ok {
						t.Errorf("%s reached the source schema: %q", k, g)
					}
				}
				if got.Host == "gateway.internal" {
					t.Error("the gateway's Host reached the source schema")
				}
				if c := got.Header.Get("Connection"); strings.Contains(strings.ToLower(c), "x-conn-named") {
					t.Errorf("Connection = %q", c)
				}
			})
		}
	}
}

// TestCallerHeaderWins: a header the caller set on the source schema
// request is not replaced by the gateway's.
func TestCallerHeaderWins(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			srv := newSchemaServer(t, nil)
			cfg := config(path, "products", srv.URL())
			cfg.ForwardHeaders = []string{"Authorization"}
			inv := newInvoker(t, cfg)
			resp, err := sendPaths[1].send(inv, gatewayCtx("Authorization", "Bearer gateway"), srv.URL(), http.Header{"Authorization": {"Bearer service"}})
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			if got := srv.Last(t).Header.Values("Authorization"); !cmp.Equal(got, []string{"Bearer service"}) {
				t.Errorf("Authorization = %q, want only the caller's", got)
			}
		})
	}
}

// TestHeaderValueWithNewlineRejected: a forwarded value with CR or LF is an
// error, and nothing reaches the source schema.
func TestHeaderValueWithNewlineRejected(t *testing.T) {
	for _, path := range paths {
		for _, sp := range sendPaths {
			t.Run(string(path)+"/"+sp.name, func(t *testing.T) {
				srv := newSchemaServer(t, nil)
				cfg := config(path, "products", srv.URL())
				cfg.ForwardHeaders = []string{"X-Tenant"}
				inv := newInvoker(t, cfg)
				_, err := sp.send(inv, gatewayCtx("X-Tenant", "acme\r\nX-Injected: 1"), srv.URL(), nil)
				if err == nil {
					t.Fatal("a header value with CR LF was accepted")
				}
				if !strings.Contains(err.Error(), `source schema "products"`) || !strings.Contains(err.Error(), "X-Tenant") {
					t.Errorf("error %q does not name the source schema and header", err)
				}
				if n := len(srv.Requests()); n != 0 {
					t.Errorf("the source schema received %d requests", n)
				}
			})
		}
	}
}

// TestMiddleware: a gateway handler wrapped in Middleware makes its
// request's headers available to the invoker.
func TestMiddleware(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			srv := newSchemaServer(t, nil)
			cfg := config(path, "products", srv.URL())
			cfg.ForwardHeaders = []string{"X-Request-Id"}
			inv := newInvoker(t, cfg)
			gw := httptest.NewServer(transport.GatewayRequestHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				resp, err := inv.Post(r.Context(), "products", []byte(`{}`))
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadGateway)
					return
				}
				defer resp.Body.Close()
				io.Copy(w, resp.Body)
			})))
			defer gw.Close()
			req, _ := http.NewRequest("POST", gw.URL, nil)
			req.Header.Set("X-Request-Id", "from-the-user")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			if got := srv.Last(t).Header.Get("X-Request-Id"); got != "from-the-user" {
				t.Errorf("X-Request-Id = %q", got)
			}
		})
	}
}

func TestUnknownSchemaAndClosed(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			srv := newSchemaServer(t, nil)
			inv, err := transport.New(config(path, "products", srv.URL()), transport.WithLookupEnv(noEnv))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := inv.Post(context.Background(), "reviews", nil); err == nil || !strings.Contains(err.Error(), `source schema "reviews"`) || !strings.Contains(err.Error(), "unknown") {
				t.Errorf("unknown schema error = %v", err)
			}
			if err := inv.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := inv.Post(context.Background(), "products", nil); err == nil || !strings.Contains(err.Error(), "closed") {
				t.Errorf("after Close: %v", err)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("the source schema received %d requests", n)
			}
		})
	}
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	for _, path := range paths {
		_, err := transport.New(config(path, "products", "127.0.0.1:4001/graphql"))
		if err == nil || !strings.Contains(err.Error(), "source_schemas.products.url") {
			t.Errorf("%s: New error = %v, want one naming source_schemas.products.url", path, err)
		}
	}
}
