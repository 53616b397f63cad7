package transport_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/answer"
	"github.com/fusiongo/transport/compare"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
	"github.com/fusiongo/transport/middleware"
)

// The security checks of the sockets path, as tests that watch the wire.
// Where a rule holds on both paths (header forwarding, cookies, header
// values, TLS verification, redaction) both are tested; the legacy path's
// known differences (it follows redirects and uses the environment's
// proxy) are in docs/design.md.

// secCall is one way of sending a source schema request: Post, or Do with
// a request the caller built.
type secCall struct {
	name string
	send func(ctx context.Context, inv transport.Invoker, u string) (*http.Response, error)
}

var secCalls = []secCall{
	{"Post", func(ctx context.Context, inv transport.Invoker, _ string) (*http.Response, error) {
		return inv.Post(ctx, "products", []byte(`{"query":"{ ok }"}`))
	}},
	{"Do", func(ctx context.Context, inv transport.Invoker, u string) (*http.Response, error) {
		req, err := http.NewRequest(http.MethodGet, u+"?query=%7B%20ok%20%7D", nil)
		if err != nil {
			return nil, err
		}
		return inv.Do(ctx, "products", req)
	}},
}

// secStats counts a security test's calls and checks, when the test and
// its subtests have ended, that descriptors and goroutines are back where
// they were; it logs the figures as a row of docs/reliability.md.
type secStats struct {
	sent, failed       atomic.Int64
	fdBefore, goBefore int
}

func startSecStats(t *testing.T) *secStats {
	t.Helper()
	warmUp(t)
	goleak.VerifyNone(t)
	st := &secStats{fdBefore: wiretest.OpenFDs(), goBefore: runtime.NumGoroutine()}
	// Registered first, so it runs last: after every server and invoker
	// of the test has been closed.
	t.Cleanup(func() {
		goleak.VerifyNone(t)
		goAfter := runtime.NumGoroutine()
		fdAfter := wiretest.WaitFDs(st.fdBefore)
		if fdAfter != st.fdBefore {
			t.Errorf("%d descriptors open after the test, %d before", fdAfter, st.fdBefore)
		}
		t.Logf("\n| test | sent | failed | fds before / after | goroutines before / after |\n|---|---|---|---|---|\n| %s | %d | %d | %d / %d | %d / %d |",
			t.Name(), st.sent.Load(), st.failed.Load(), st.fdBefore, fdAfter, st.goBefore, goAfter)
	})
	return st
}

// send makes call and counts it.
func (st *secStats) send(ctx context.Context, call secCall, inv transport.Invoker, u string) (*http.Response, error) {
	st.sent.Add(1)
	resp, err := call.send(ctx, inv, u)
	if err != nil {
		st.failed.Add(1)
	}
	return resp, err
}

// post is the post helper, counted.
func (st *secStats) post(t *testing.T, inv transport.Invoker, ctx context.Context, schema string) (*http.Response, string) {
	t.Helper()
	st.sent.Add(1)
	return post(t, inv, ctx, schema)
}

// TestSecurityNoRedirects: the sockets path returns every redirect status
// as it arrived, on Post and Do; the host it points to, another server,
// sees no connection and no request, and a redirect to the same host is
// not followed either.
func TestSecurityNoRedirects(t *testing.T) {
	st := startSecStats(t)
	for _, status := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		for _, target := range []string{"other host", "same host"} {
			for _, call := range secCalls {
				t.Run(fmt.Sprintf("%d/%s/%s", status, target, call.name), func(t *testing.T) {
					other := newSchemaServer(t, nil)
					location := other.URL()
					if target == "same host" {
						location = "/elsewhere"
					}
					srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
						if r.URL.Path == "/elsewhere" {
							io.WriteString(w, `{"data":{"followed":true}}`)
							return
						}
						w.Header().Set("Location", location)
						w.WriteHeader(status)
					})
					inv := newInvoker(t, config(env.PathSockets, "products", srv.URL()))
					resp, err := st.send(context.Background(), call, inv, srv.URL())
					if err != nil {
						t.Fatalf("%s: %v", call.name, err)
					}
					readAll(t, resp)
					if resp.StatusCode != status || resp.Header.Get("Location") != location {
						t.Errorf("caller got %d with Location %q, want the %d to %q as it arrived", resp.StatusCode, resp.Header.Get("Location"), status, location)
					}
					if n := len(srv.Requests()); n != 1 {
						t.Errorf("the source schema received %d requests, want 1", n)
					}
					if reqs, conns := other.Requests(), other.Opened(); len(reqs) != 0 || len(conns) != 0 {
						t.Errorf("the redirect's other host received %d requests on %d connections, want none", len(reqs), len(conns))
					}
				})
			}
		}
	}
}

// TestSecurityNoEnvironmentProxy: with every proxy variable set, in the
// process environment and through WithLookupEnv, the sockets path with
// default settings never contacts the proxy, for http and https targets,
// on Post and Do. The target's name fails DNS, so a request that did not
// go through the proxy fails; what counts is that the proxy saw nothing.
// The control, proxy: environment, shows that the proxy would see it.
func TestSecurityNoEnvironmentProxy(t *testing.T) {
	st := startSecStats(t)
	proxy := wiretest.NewProxy(t)
	vars := []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"}
	for _, k := range vars {
		t.Setenv(k, proxy.URL)
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	lookup := func(k string) (string, bool) {
		if slices.Contains(vars, k) {
			return proxy.URL, true
		}
		return "", false
	}
	lookups := []struct {
		name string
		opts []transport.Option
	}{
		// newInvoker injects an empty lookup; os.LookupEnv puts the
		// process environment back.
		{"process environment", []transport.Option{transport.WithLookupEnv(os.LookupEnv)}},
		{"WithLookupEnv", []transport.Option{transport.WithLookupEnv(lookup)}},
	}
	for _, lk := range lookups {
		for _, scheme := range []string{"http", "https"} {
			for _, call := range secCalls {
				t.Run(lk.name+"/"+scheme+"/"+call.name, func(t *testing.T) {
					u := scheme + "://products.fusion.invalid/graphql"
					before := len(proxy.Opened())
					cfg := withSchema(env.PathSockets, u, func(s *env.SourceSchema) { s.ConnectTimeout = 2 * time.Second })
					inv := newInvoker(t, cfg, lk.opts...)
					resp, err := st.send(context.Background(), call, inv, u)
					if err == nil {
						body := readAll(t, resp)
						t.Errorf("%s reached products.fusion.invalid: %d %q", call.name, resp.StatusCode, body)
					}
					if n := len(proxy.Opened()) - before; n != 0 {
						t.Errorf("the proxy saw %d connections, want none (error: %v)", n, err)
					}
				})
			}
		}
		t.Run(lk.name+"/control: proxy environment", func(t *testing.T) {
			u := "http://products.fusion.invalid/graphql"
			before := len(proxy.Requests())
			inv := newInvoker(t, withSchema(env.PathSockets, u, func(s *env.SourceSchema) { s.Proxy = "environment" }), lk.opts...)
			resp, body := st.post(t, inv, context.Background(), "products")
			if resp.StatusCode != http.StatusOK || body != `{"data":{"via":"proxy"}}` || len(proxy.Requests())-before != 1 {
				t.Errorf("with proxy: environment got %d %q and the proxy saw %d requests, want its answer and 1", resp.StatusCode, body, len(proxy.Requests())-before)
			}
		})
	}
	if n := len(proxy.Requests()); n != len(lookups) {
		t.Errorf("the proxy received %d requests in all, want only the %d controls'", n, len(lookups))
	}
}

// The hop-by-hop headers of RFC 9110, section 7.6.1, and the others
// headers.IsHopByHop counts: Host, and any Proxy-* header.
var secHopByHop = []string{"Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Proxy-Connection", "TE", "Trailer", "Transfer-Encoding", "Upgrade", "Host", "Proxy-Custom"}

// TestSecurityHeaderForwarding: forward_headers lists every hop-by-hop
// header, Host, a header that the gateway request's Connection header
// names, and two ordinary headers; the gateway request carries all of them
// and unlisted ones too. On both paths, on Post and Do, the source schema
// sees the two ordinary headers and nothing else of the gateway request:
// no value of any other header reaches it under any name, and its Host is
// its own.
func TestSecurityHeaderForwarding(t *testing.T) {
	st := startSecStats(t)
	listed := []string{"X-Tenant", "X-Request-Id"}
	namedByConnection := "X-Named-By-Connection"
	unlisted := []string{"X-Unlisted", "Authorization", "Cookie", "Forwarded", "X-Forwarded-For"}
	// Every gateway header's value is unique, so that it can be found
	// wherever it lands.
	value := func(name string) string { return "gw-" + strings.ToLower(name) }
	var gw []string
	for _, n := range slices.Concat(secHopByHop, listed, []string{namedByConnection}, unlisted) {
		v := value(n)
		if n == "Connection" {
			v = namedByConnection + ", " + v
		}
		if n == "Host" {
			v = "evil.example"
		}
		gw = append(gw, n, v)
	}
	for _, path := range paths {
		for _, call := range secCalls {
			t.Run(string(path)+"/"+call.name, func(t *testing.T) {
				srv := newSchemaServer(t, nil)
				cfg := withSchema(path, srv.URL(), nil)
				cfg.ForwardHeaders = slices.Concat(secHopByHop, listed, []string{namedByConnection})
				inv := newInvoker(t, cfg)
				resp, err := st.send(gatewayCtx(gw...), call, inv, srv.URL())
				if err != nil {
					t.Fatal(err)
				}
				if body := readAll(t, resp); resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d %q", resp.StatusCode, body)
				}
				got := srv.Last(t)
				if want := srv.Listener.Addr().String(); got.Host != want {
					t.Errorf("the source schema saw Host %q, want its own %q", got.Host, want)
				}
				for _, n := range listed {
					if v := got.Header.Values(n); !slices.Equal(v, []string{value(n)}) {
						t.Errorf("listed header %s arrived as %q, want %q", n, v, value(n))
					}
				}
				for name, values := range got.Header {
					for _, v := range values {
						if strings.Contains(v, "gw-") && !slices.Contains(listed, name) {
							t.Errorf("gateway header value %q reached the source schema as %s", v, name)
						}
					}
				}
				for _, n := range slices.Concat(secHopByHop, []string{namedByConnection}, unlisted) {
					if v, ok := got.Header[http.CanonicalHeaderKey(n)]; ok && n != "Host" {
						t.Errorf("%s reached the source schema: %q", n, v)
					}
				}
			})
		}
	}
}

// TestSecurityCookies: a Set-Cookie that the source schema gives one
// gateway request never comes back with another, on both paths and on Post
// and Do: user B's request carries no Cookie after user A's got one, and
// with two users calling at once no request ever does. When Cookie is a
// forwarded header, each request carries its own user's cookie and never
// the other's or the one the source schema set.
func TestSecurityCookies(t *testing.T) {
	st := startSecStats(t)
	handler := func(w http.ResponseWriter, r *http.Request) {
		user := r.Header.Get("X-User")
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "set-for-" + user, Path: "/"})
		io.WriteString(w, `{"data":{"ok":true}}`)
	}
	for _, forwardCookie := range []bool{false, true} {
		for _, path := range paths {
			for _, call := range secCalls {
				name := string(path) + "/" + call.name
				if forwardCookie {
					name += "/Cookie forwarded"
				}
				t.Run(name, func(t *testing.T) {
					srv := newSchemaServer(t, handler)
					cfg := withSchema(path, srv.URL(), nil)
					cfg.ForwardHeaders = []string{"X-User"}
					if forwardCookie {
						cfg.ForwardHeaders = append(cfg.ForwardHeaders, "Cookie")
					}
					inv := newInvoker(t, cfg)
					userCtx := func(user string) context.Context {
						return gatewayCtx("X-User", user, "Cookie", "own="+user)
					}
					// wantCookie is what a request of user must carry.
					wantCookie := func(user string) []string {
						if forwardCookie {
							return []string{"own=" + user}
						}
						return nil
					}
					send := func(user string) error {
						resp, err := st.send(userCtx(user), call, inv, srv.URL())
						if err != nil {
							return err
						}
						defer resp.Body.Close()
						io.Copy(io.Discard, resp.Body)
						if got := resp.Header.Get("Set-Cookie"); got != "session=set-for-"+user+"; Path=/" {
							return fmt.Errorf("user %s got Set-Cookie %q", user, got)
						}
						return nil
					}

					if err := send("alice"); err != nil {
						t.Fatal(err)
					}
					if err := send("bob"); err != nil {
						t.Fatal(err)
					}
					var wg sync.WaitGroup
					errs := make(chan error, 2)
					for _, user := range []string{"alice", "bob"} {
						wg.Go(func() {
							for range 20 {
								if err := send(user); err != nil {
									errs <- err
									return
								}
							}
						})
					}
					wg.Wait()
					close(errs)
					for err := range errs {
						t.Error(err)
					}

					reqs := srv.Requests()
					if len(reqs) != 42 {
						t.Errorf("the source schema received %d requests, want 42", len(reqs))
					}
					for i, r := range reqs {
						user := r.Header.Get("X-User")
						if got := r.Header.Values("Cookie"); !slices.Equal(got, wantCookie(user)) {
							t.Errorf("request %d of %s carried Cookie %q, want %q", i, user, got, wantCookie(user))
						}
					}
				})
			}
		}
	}
}

// TestSecurityHeaderValueInjection: a gateway header value with CR, LF or
// NUL is rejected, whichever rule would forward it (a listed name, a
// pattern, a rename), on both paths and on Post and Do: the error names
// the header and the source schema and wraps fault.ErrInvalidHeaderValue, and
// the source schema sees no connection, let alone a request.
func TestSecurityHeaderValueInjection(t *testing.T) {
	st := startSecStats(t)
	rules := []struct {
		name   string
		edit   func(*env.SourceSchema)
		header string // the name the error must give
	}{
		{"forward_headers", func(s *env.SourceSchema) { s.ForwardHeaders = []string{"X-Tenant"} }, "X-Tenant"},
		{"forward_matching", func(s *env.SourceSchema) { s.Headers.ForwardMatching = []string{"^X-Ten"} }, "X-Tenant"},
		{"rename", func(s *env.SourceSchema) { s.Headers.Rename = map[string]string{"X-Tenant": "X-Source-Tenant"} }, "X-Source-Tenant"},
	}
	values := map[string]string{
		"CRLF": "acme\r\nX-Injected: 1",
		"LF":   "acme\nX-Injected: 1",
		"CR":   "acme\rX-Injected: 1",
		"NUL":  "acme\x00",
	}
	for _, path := range paths {
		for _, rule := range rules {
			for _, kind := range []string{"CRLF", "LF", "CR", "NUL"} {
				for _, call := range secCalls {
					t.Run(fmt.Sprintf("%s/%s/%s/%s", path, rule.name, kind, call.name), func(t *testing.T) {
						srv := newSchemaServer(t, nil)
						inv := newInvoker(t, withSchema(path, srv.URL(), rule.edit))
						resp, err := st.send(gatewayCtx("X-Tenant", values[kind]), call, inv, srv.URL())
						if err == nil {
							readAll(t, resp)
							t.Fatalf("%s sent a header value with %s: %s", call.name, kind, resp.Status)
						}
						if !errors.Is(err, fault.ErrInvalidHeaderValue) {
							t.Errorf("error %q does not wrap fault.ErrInvalidHeaderValue", err)
						}
						if !strings.Contains(err.Error(), rule.header) || !strings.Contains(err.Error(), `source schema "products"`) {
							t.Errorf("error %q does not name the header %s and the source schema", err, rule.header)
						}
						if reqs, conns := srv.Requests(), srv.Opened(); len(reqs) != 0 || len(conns) != 0 {
							t.Errorf("the source schema saw %d requests on %d connections, want none", len(reqs), len(conns))
						}
					})
				}
			}
		}
	}
}

// newSelfSignedServer starts a TLS source schema with httptest's
// certificate, which no system trusts; its handshake errors stay out of
// the test log.
func newSelfSignedServer(t *testing.T) *schemaServer {
	t.Helper()
	// An empty TLS config: httptest adds its own certificate.
	return newWireServer(t, wiretest.Options{TLS: &tls.Config{}})
}

// TestSecurityTLSVerifiedByDefault: a source schema with a self-signed
// certificate fails the handshake with an x509 error on both paths, on
// Post and Do, and its handler sees nothing. The controls show that it is
// verification that fails: trusting its certificate (tls.ca_file), or
// turning verification off, reaches it.
func TestSecurityTLSVerifiedByDefault(t *testing.T) {
	st := startSecStats(t)
	srv := newSelfSignedServer(t)
	for _, path := range paths {
		for _, call := range secCalls {
			t.Run(string(path)+"/"+call.name, func(t *testing.T) {
				before := len(srv.Requests())
				inv := newInvoker(t, withSchema(path, srv.URL(), nil))
				resp, err := st.send(context.Background(), call, inv, srv.URL())
				if err == nil {
					readAll(t, resp)
					t.Fatalf("%s to a self-signed server succeeded: %s", call.name, resp.Status)
				}
				var unknown x509.UnknownAuthorityError
				if !errors.As(err, &unknown) || !strings.Contains(err.Error(), "x509: certificate signed by unknown authority") {
					t.Errorf("error %q (chain: %s) is not an x509 unknown authority error", err, chain(err))
				}
				if n := len(srv.Requests()) - before; n != 0 {
					t.Errorf("the source schema's handler saw %d requests", n)
				}
			})
		}
	}

	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	controls := map[string]func(*env.SourceSchema){
		"control: tls.ca_file":              func(s *env.SourceSchema) { s.TLS.CAFile = caFile },
		"control: tls.insecure_skip_verify": func(s *env.SourceSchema) { s.TLS.InsecureSkipVerify = env.Enabled },
	}
	for name, edit := range controls {
		t.Run("sockets/"+name, func(t *testing.T) {
			inv := newInvoker(t, withSchema(env.PathSockets, srv.URL(), edit))
			if resp, body := st.post(t, inv, context.Background(), "products"); resp.StatusCode != http.StatusOK {
				t.Errorf("got %d %q", resp.StatusCode, body)
			}
		})
	}
}

// TestSecurityRedaction: requests carry credentials in every place a
// request can (Authorization, Cookie and Proxy-Authorization on the
// gateway request and on a caller's request, a password in the source
// schema's URL), and the source schema answers with credentials in
// sensitive response headers that differ between the paths. Every log line
// of both paths at Debug (middleware.RequestLog, WithRequestLog, retries,
// reloads, failures), the shadow mode's mismatch logs, the compare report in its
// text, JSON and JUnit forms, and the errors callers get hold none of the
// secrets.
func TestSecurityRedaction(t *testing.T) {
	st := startSecStats(t)
	const (
		token     = "secret-token-123"
		cookie    = "secret-cookie-456"
		password  = "secret-pass-789"
		proxyCred = "secret-proxy-321"
	)
	secrets := []string{token, cookie, password, proxyCred, base64.StdEncoding.EncodeToString([]byte("user:" + password))}
	gwHeaders := map[string]string{
		"Authorization":       "Bearer " + token,
		"Cookie":              "session=" + cookie,
		"Proxy-Authorization": "Basic " + proxyCred,
	}
	var gwPairs []string
	for k, v := range gwHeaders {
		gwPairs = append(gwPairs, k, v)
	}

	var logs logBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var (
		sawSecret atomic.Bool  // the secrets did reach the wire
		flaky     atomic.Int64 // the flaky path answers 503 every other time
	)
	srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get("Authorization"), token) || strings.Contains(r.Header.Get("Cookie"), cookie) {
			sawSecret.Store(true)
		}
		// legacy asks for gzip and sockets does not: answer each with
		// its own credentials, so that comparisons have sensitive values
		// that differ.
		side := "sockets"
		if r.Header.Get("Accept-Encoding") != "" {
			side = "legacy"
		}
		w.Header().Set("Set-Cookie", "session="+cookie+"-"+side)
		w.Header().Set("Authorization", "Bearer "+token+"-"+side)
		if r.URL.Path == "/flaky" && flaky.Add(1)%2 == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, `{"data":{"ok":true}}`)
	})
	withPassword := func(u string) string { return strings.Replace(u, "http://", "http://user:"+password+"@", 1) }
	refused := wiretest.RefusedAddr(t)
	urls := map[string]string{
		"products": withPassword(srv.URL()),
		"flaky":    withPassword(srv.Server.URL + "/flaky"),
		"refused":  withPassword("http://" + refused + "/graphql"),
	}
	cfgFor := func(path env.Path) env.Config {
		cfg := config(path, "products", urls["products"], "flaky", urls["flaky"], "refused", urls["refused"])
		cfg.ForwardHeaders = []string{"Authorization", "Cookie", "Proxy-Authorization"}
		f := cfg.SourceSchemas["flaky"]
		f.Retry = env.RetrySettings{MaxAttempts: 2, WaitMin: time.Millisecond, WaitMax: 5 * time.Millisecond}
		cfg.SourceSchemas["flaky"] = f
		cfg.Defaults.ConnectTimeout = 2 * time.Second
		return cfg
	}
	opts := func() []transport.Option {
		return []transport.Option{transport.WithLogger(logger), transport.WithMiddleware(middleware.RequestLog(logger, "any")), transport.WithRequestLog(logger)}
	}

	var callerErrs []string
	invokers := map[env.Path]transport.Invoker{}
	for _, path := range paths {
		inv := newInvoker(t, cfgFor(path), opts()...)
		invokers[path] = inv
		ctx := gatewayCtx(gwPairs...)
		st.post(t, inv, ctx, "products")
		st.post(t, inv, ctx, "flaky")
		refusedCall := secCall{"Post refused", func(ctx context.Context, inv transport.Invoker, _ string) (*http.Response, error) {
			return inv.Post(ctx, "refused", []byte(`{}`))
		}}
		if _, err := st.send(ctx, refusedCall, inv, ""); err == nil {
			t.Errorf("%s: Post to a refused port succeeded", path)
		} else {
			callerErrs = append(callerErrs, err.Error())
		}
		// Do with the credentials on the caller's own request.
		doCall := secCall{"Do with credentials", func(ctx context.Context, inv transport.Invoker, u string) (*http.Response, error) {
			req, err := http.NewRequest(http.MethodGet, u, nil)
			if err != nil {
				return nil, err
			}
			for k, v := range gwHeaders {
				req.Header.Set(k, v)
			}
			return inv.Do(ctx, "products", req)
		}}
		resp, err := st.send(ctx, doCall, inv, urls["products"]+"?query=%7B%20ok%20%7D")
		if err != nil {
			t.Fatalf("%s: Do: %v", path, err)
		}
		readAll(t, resp)
		// Do to another address: sockets refuses it, legacy meets a
		// refused port; both errors are shown to callers.
		if _, err := st.send(ctx, doCall, inv, withPassword("http://"+refused+"/other")); err == nil {
			t.Errorf("%s: Do to a refused port succeeded", path)
		} else {
			callerErrs = append(callerErrs, err.Error())
		}
		if err := inv.Reload(cfgFor(path)); err != nil {
			t.Fatal(err)
		}
	}

	// The compare report of the two paths.
	corpus := []compare.Request{
		{Name: "products/post", Schema: "products", Body: []byte(`{"query":"{ ok }"}`), Headers: gwHeaders},
		{Name: "products/get", Schema: "products", Method: http.MethodGet, Path: "/graphql?query=%7B%20ok%20%7D", Headers: gwHeaders},
		{Name: "refused/post", Schema: "refused", Body: []byte(`{"query":"{ ok }"}`), Headers: gwHeaders},
	}
	report, err := compare.Run(context.Background(), corpus,
		compare.Side{Name: "legacy", Invoker: invokers[env.PathLegacy]},
		compare.Side{Name: "sockets", Invoker: invokers[env.PathSockets]},
		compare.Options{URLs: urls})
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range report.Results {
		for _, o := range []answer.Answer{res.A, res.B} {
			st.sent.Add(1)
			if o.Err != "" {
				st.failed.Add(1)
			}
		}
	}
	var text, jsonOut, junit bytes.Buffer
	if err := report.Write(&text); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteJSON(&jsonOut); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteJUnit(&junit, "redaction"); err != nil {
		t.Fatal(err)
	}

	// Shadow mode: legacy serves, sockets is compared, and the mismatch
	// is logged by the default publisher, on the invoker's logger.
	shadowCfg := cfgFor(env.PathLegacy)
	shadowCfg.Shadow.Rate = 1
	sh := newInvoker(t, shadowCfg, opts()...)
	st.post(t, sh, gatewayCtx(gwPairs...), "products")
	st.sent.Add(1) // the shadow's request through sockets
	sh.Close()     // waits for the comparison

	outputs := map[string]string{
		"log":               logs.String(),
		"report text":       text.String(),
		"report JSON":       jsonOut.String(),
		"report JUnit":      junit.String(),
		"errors to callers": strings.Join(callerErrs, "\n"),
	}
	// The checks must have had something to find.
	if !sawSecret.Load() {
		t.Error("no secret reached the source schema: the test sends none")
	}
	for _, want := range []string{`msg="source schema request"`, `msg="source schema request failed"`, `msg="retrying source schema request"`, `msg="transport reloaded"`, `msg="shadow mismatch"`} {
		if !strings.Contains(outputs["log"], want) {
			t.Errorf("the log has no %s line; log:\n%s", want, outputs["log"])
		}
	}
	if !strings.Contains(text.String(), "DIFF products/post") || !strings.Contains(text.String(), answer.Redacted) {
		t.Errorf("the report shows no redacted difference:\n%s", text.String())
	}
	for name, out := range outputs {
		for line := range strings.Lines(out) {
			for _, s := range secrets {
				if strings.Contains(line, s) {
					t.Errorf("%s holds secret %q: %s", name, s, strings.TrimSpace(line))
				}
			}
		}
	}
	t.Logf("checked %d log lines, a report of %d requests (%d bytes of text, JSON and JUnit) and %d caller errors for %d secrets",
		strings.Count(outputs["log"], "\n"), len(report.Results), text.Len()+jsonOut.Len()+junit.Len(), len(callerErrs), len(secrets))
}

// TestLegacyRedirectAuthorization: the legacy path follows a 307 and
// forwards the gateway's Authorization only to hops on the first request's
// host (URL.Host, port included). The other server is on another port of
// 127.0.0.1, so it is another host.
func TestLegacyRedirectAuthorization(t *testing.T) {
	const secret = "Bearer gateway-secret"
	cases := []struct {
		name      string
		otherHost bool // the 307 points to another server; else to a path on the same one
		wantAuth  bool // the redirect's hop carries Authorization
	}{
		{"to another host", true, false},
		{"to the same host", false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			other := newSchemaServer(t, nil)
			srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/elsewhere" {
					io.WriteString(w, `{"data":{"ok":true}}`)
					return
				}
				location := "/elsewhere"
				if c.otherHost {
					location = other.URL()
				}
				http.Redirect(w, r, location, http.StatusTemporaryRedirect)
			})
			cfg := config(env.PathLegacy, "products", srv.URL())
			cfg.ForwardHeaders = []string{"Authorization"}
			inv := newInvoker(t, cfg)
			resp, body := post(t, inv, gatewayCtx("Authorization", secret), "products")
			if resp.StatusCode != http.StatusOK || body != `{"data":{"ok":true}}` {
				t.Fatalf("caller got %d %q, want the redirect followed", resp.StatusCode, body)
			}
			first := srv.Requests()[0]
			if got := first.Header.Get("Authorization"); got != secret {
				t.Errorf("the first hop carried Authorization %q, want %q", got, secret)
			}
			hops := srv.Requests()[1:]
			if c.otherHost {
				hops = other.Requests()
			}
			if len(hops) != 1 || hops[0].Method != http.MethodPost || hops[0].Body != `{"query":"{ ok }"}` {
				t.Fatalf("the redirect's target received %+v, want the POST once", hops)
			}
			if got, has := hops[0].Header["Authorization"]; has != c.wantAuth {
				t.Errorf("the redirect's hop to %s carried Authorization %q; want it: %v (forwarded only to the first request's host)", hops[0].Host, got, c.wantAuth)
			}
		})
	}
}

// TestSocketsIgnoresProcessProxy: with HTTP_PROXY set in the process
// environment and no WithLookupEnv, the sockets path goes direct unless the
// schema says proxy: environment. The schema has a name that is not
// loopback, so Go's loopback exemption cannot hide a proxy; a Dial hook
// takes that name to the schema's server and dials any other address as
// asked.
func TestSocketsIgnoresProcessProxy(t *testing.T) {
	proxy := wiretest.NewProxy(t)
	for _, k := range []string{"HTTP_PROXY", "http_proxy"} {
		t.Setenv(k, proxy.URL)
	}
	for _, k := range []string{"NO_PROXY", "no_proxy"} {
		t.Setenv(k, "")
	}
	cases := []struct {
		proxy     string
		wantProxy bool
	}{
		{"", false},
		{"off", false},
		{"environment", true}, // the control: the proxy would see the request
	}
	for _, c := range cases {
		t.Run("proxy="+c.proxy, func(t *testing.T) {
			srv := newSchemaServer(t, nil)
			_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
			name := net.JoinHostPort("products.internal", port)
			dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
				if addr == name {
					addr = srv.Listener.Addr().String()
				}
				var d net.Dialer
				return d.DialContext(ctx, network, addr)
			}
			before := len(proxy.Requests())
			inv := newInvokerProcessEnv(t, socketsConfig("http://"+name+"/graphql", func(s *env.SourceSchema) { s.Proxy = c.proxy }),
				transport.WithSchemaOptions("products", transport.SchemaOptions{Dial: dial}))
			_, body := post(t, inv, context.Background(), "products")
			viaProxy, direct := len(proxy.Requests())-before, len(srv.Requests())
			if c.wantProxy {
				if viaProxy != 1 || direct != 0 || body != `{"data":{"via":"proxy"}}` {
					t.Errorf("proxy saw %d, schema %d, body %q; want the request through HTTP_PROXY", viaProxy, direct, body)
				}
				return
			}
			if viaProxy != 0 || direct != 1 {
				t.Errorf("proxy saw %d requests, schema %d; want the request direct, HTTP_PROXY of the process ignored", viaProxy, direct)
			}
		})
	}
}

// TestLegacyCGIIgnoresHTTPProxy: under CGI (REQUEST_METHOD set) the
// legacy path ignores HTTP_PROXY, which a CGI client can set with a Proxy
// header (httpoxy). The schema's name does not resolve, so a request that
// does not go through the proxy fails; what counts is whether the proxy
// saw it. The control, without REQUEST_METHOD, goes through the proxy.
func TestLegacyCGIIgnoresHTTPProxy(t *testing.T) {
	const schemaURL = "http://products.fusion.invalid/graphql"
	proxy := wiretest.NewProxy(t)
	cases := []struct {
		name      string
		cgi       bool
		wantProxy bool
	}{
		{"REQUEST_METHOD set", true, false},
		{"no REQUEST_METHOD", false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) {
				switch {
				case k == "HTTP_PROXY":
					return proxy.URL, true
				case k == "REQUEST_METHOD" && c.cgi:
					return "GET", true
				}
				return "", false
			}
			before := len(proxy.Requests())
			cfg := config(env.PathLegacy, "products", schemaURL)
			cfg.Defaults.ConnectTimeout = 2 * time.Second
			inv := newInvoker(t, cfg, transport.WithLookupEnv(lookup))
			resp, err := inv.Post(context.Background(), "products", []byte(`{"query":"{ ok }"}`))
			viaProxy := len(proxy.Requests()) - before
			if !c.wantProxy {
				if err == nil {
					readAll(t, resp)
					t.Error("the call succeeded: it cannot without the proxy")
				}
				if viaProxy != 0 {
					t.Errorf("the proxy saw %d requests under CGI, want none: HTTP_PROXY must be ignored", viaProxy)
				}
				return
			}
			if err != nil {
				t.Fatalf("Post: %v, want the proxy's answer", err)
			}
			if body := readAll(t, resp); body != `{"data":{"via":"proxy"}}` || viaProxy != 1 {
				t.Errorf("body %q, proxy saw %d requests; want the request through HTTP_PROXY", body, viaProxy)
			}
		})
	}
}

// TestSecurityRequestURLParts: the URL of a request, as errors and log
// lines show it, is scheme, host and path only: a GraphQL GET carries its
// document and variables in the query, and a caller's URL may hold
// userinfo. On every path, a GET to a refused port (the dial's error) and a
// POST whose URL carries a query, retried after a 503 until the retries
// give up (retry's error and log lines), leave no query, fragment or
// userinfo in the caller's error or in any log line at Debug
// (WithLogger, middleware.RequestLog, WithRequestLog); each names the host
// and the path.
func TestSecurityRequestURLParts(t *testing.T) {
	parts := []string{"pw-secret", "doc-secret", "var-secret", "frag-secret", "user:", "@"}
	const query = "?query=%7Bdoc-secret%7D&variables=%7B%22card%22%3A%22var-secret%22%7D#frag-secret"
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			var logs logBuffer
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusServiceUnavailable)
			})
			refused := "http://" + wiretest.RefusedAddr(t) + "/graphql"
			cfg := config(p, "products", srv.URL(), "refused", refused)
			s := cfg.SourceSchemas["products"]
			s.Retry = env.RetrySettings{MaxAttempts: 2, WaitMin: time.Millisecond, WaitMax: 2 * time.Millisecond}
			cfg.SourceSchemas["products"] = s
			inv := newInvoker(t, cfg, transport.WithLogger(logger), transport.WithMiddleware(middleware.RequestLog(logger, "any")), transport.WithRequestLog(logger))
			withUser := func(u string) string { return strings.Replace(u, "http://", "http://user:pw-secret@", 1) }

			get, err := http.NewRequest(http.MethodGet, withUser(refused)+query, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, getErr := inv.Do(context.Background(), "refused", get)
			post, err := http.NewRequest(http.MethodPost, withUser(srv.URL())+query, strings.NewReader(queryBody))
			if err != nil {
				t.Fatal(err)
			}
			resp, postErr := inv.Do(context.Background(), "products", post)
			if postErr == nil {
				// Retry gives up with the last answer: it carries no URL.
				resp.Body.Close()
			}
			if getErr == nil {
				t.Fatal("a GET to a refused port succeeded")
			}
			if !strings.Contains(getErr.Error(), strings.TrimPrefix(refused, "http://")) {
				t.Errorf("the error %q does not name the host and path", getErr)
			}
			if n := len(srv.Requests()); n != 2 {
				t.Errorf("the source schema got %d tries, want 2 (the retry ran)", n)
			}
			outputs := map[string]string{"GET error": getErr.Error(), "logs": logs.String()}
			if postErr != nil {
				outputs["POST error"] = postErr.Error()
			}
			for name, out := range outputs {
				for _, part := range parts {
					if strings.Contains(out, part) {
						t.Errorf("%s hold %q:\n%s", name, part, out)
					}
				}
			}
			if !strings.Contains(logs.String(), "/graphql") {
				t.Errorf("no log line names the path:\n%s", logs.String())
			}
		})
	}
}
