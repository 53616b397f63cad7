package legacy_test

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/setting"
	"github.com/fusiongo/transport/legacy"
)

// TestNewErrors: New names the key it refuses or finds wrong.
func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    legacy.Config
		want string
	}{
		{"per-schema key", legacy.Config{Settings: env.Settings{HeaderTimeout: time.Second}}, "header_timeout is not a setting of the shared transport"},
		{"sockets key", legacy.Config{Settings: env.Settings{Engine: env.EngineH1}}, "engine"},
		{"bad value", legacy.Config{Settings: env.Settings{MaxConnsPerHost: -5}}, "max_conns_per_host"},
		// The shared transport's TLS is Go's (the system's roots, a 10s
		// handshake bound): the tls keys are the sockets path's.
		{"tls_handshake_timeout", legacy.Config{Settings: env.Settings{TLSHandshakeTimeout: time.Second}}, "tls_handshake_timeout is not a setting of the shared transport"},
		{"tls.ca_file", legacy.Config{Settings: env.Settings{TLS: env.TLSSettings{CAFile: "ca.pem"}}}, "tls.ca_file is not a setting of the shared transport"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lt, err := legacy.New(tc.c)
			if err == nil {
				lt.Close()
				t.Fatal("New succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v; want it to name %q", err, tc.want)
			}
		})
	}
}

// TestSharedAndClosed: requests to two hosts share the transport, each
// reuses its warm connection, and after Close a request fails with
// fault.ErrClosed, unsent, and the idle connections are closed.
func TestSharedAndClosed(t *testing.T) {
	type counted struct {
		*httptest.Server
		opened, hits atomic.Int64
		closed       chan struct{}
	}
	start := func() *counted {
		c := &counted{closed: make(chan struct{}, 16)}
		c.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { c.hits.Add(1) }))
		c.Config.ConnState = func(_ net.Conn, st http.ConnState) {
			switch st {
			case http.StateNew:
				c.opened.Add(1)
			case http.StateClosed:
				c.closed <- struct{}{}
			}
		}
		c.Start()
		t.Cleanup(c.Close)
		return c
	}
	a, b := start(), start()
	lt, err := legacy.New(legacy.Config{LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	client := lt.Client()
	for range 3 {
		for _, s := range []*counted{a, b} {
			resp, err := client.Get(s.URL)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	for i, s := range []*counted{a, b} {
		if s.opened.Load() != 1 || s.hits.Load() != 3 {
			t.Errorf("server %d: %d connections, %d requests; want 1 warm connection for 3 requests", i, s.opened.Load(), s.hits.Load())
		}
	}
	lt.Close()
	for i, s := range []*counted{a, b} {
		select {
		case <-s.closed:
		case <-time.After(10 * time.Second):
			t.Fatalf("server %d: the idle connection was not closed by Close", i)
		}
	}
	if _, err := client.Get(a.URL); !errors.Is(err, fault.ErrClosed) {
		t.Fatalf("after Close: %v, want fault.ErrClosed", err)
	}
	if n := a.hits.Load(); n != 3 {
		t.Errorf("server saw %d requests, want 3", n)
	}
}

// TestConfigDocListsTheSharedKeys: the settings Config.Settings's doc lists
// as the shared transport's are the keys New takes (those a change of
// which rebuilds the legacy shared client), no more and no fewer (a word
// "tls.*" would list every tls key); and New takes all of them at once.
func TestConfigDocListsTheSharedKeys(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "legacy.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var doc string
	ast.Inspect(f, func(n ast.Node) bool {
		if ts, ok := n.(*ast.TypeSpec); ok && ts.Name.Name == "Config" {
			for _, field := range ts.Type.(*ast.StructType).Fields.List {
				if len(field.Names) == 1 && field.Names[0].Name == "Settings" {
					doc = field.Doc.Text()
				}
			}
		}
		return true
	})
	if doc == "" {
		t.Fatal("no doc on Config.Settings")
	}
	words := strings.FieldsFunc(doc, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '*')
	})
	var listed, taken []string
	for _, key := range setting.Keys() {
		if slices.ContainsFunc(words, func(w string) bool {
			w = strings.TrimSuffix(w, ".")
			return w == key || strings.HasSuffix(w, ".*") && strings.HasPrefix(key, strings.TrimSuffix(w, "*"))
		}) {
			listed = append(listed, key)
		}
		if setting.Rebuilds(key, env.PathLegacy) == setting.RebuildShared {
			taken = append(taken, key)
		}
	}
	if !slices.Equal(listed, taken) {
		t.Errorf("Config.Settings lists %v; New takes %v", listed, taken)
	}

	shared := setting.Only(env.Config{}.EffectiveDefaults(), env.PathLegacy, func(r setting.Rebuild) bool { return r == setting.RebuildShared })
	shared.MaxIdleConnsPerHost = 4 // unset by default: Go's 2
	if got := setting.Diff(env.Settings{}, shared); !slices.Equal(got, taken) {
		t.Fatalf("the built-in defaults set %v of the shared keys %v", got, taken)
	}
	lt, err := legacy.New(legacy.Config{Settings: shared, LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatalf("New with every shared key set: %v", err)
	}
	defer lt.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	resp, err := lt.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// closeBody is a request body that records that it was closed.
type closeBody struct {
	*strings.Reader
	closed atomic.Bool
}

func (b *closeBody) Close() error { b.closed.Store(true); return nil }

// post builds a POST to srv whose body records its Close.
func post(srv *httptest.Server) (*http.Request, *closeBody) {
	body := &closeBody{Reader: strings.NewReader(`{"query":"{ ok }"}`)}
	req, err := http.NewRequest(http.MethodPost, srv.URL, body)
	if err != nil {
		panic(err) // srv.URL always parses; callers run in goroutines, where t.Fatal may not
	}
	return req, body
}

// TestRoundTripAfterClose: after Close, RoundTrip fails with
// fault.ErrClosed itself (not the backend's own error), closes the
// request's body as a RoundTripper must, and sends nothing.
func TestRoundTripAfterClose(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	lt, err := legacy.New(legacy.Config{LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	lt.Close()
	req, body := post(srv)
	resp, err := lt.RoundTrip(req)
	if err != fault.ErrClosed {
		if resp != nil {
			resp.Body.Close()
		}
		t.Errorf("RoundTrip after Close: %v, want fault.ErrClosed", err)
	}
	if !body.closed.Load() {
		t.Error("RoundTrip after Close left the request body open")
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the server got %d requests after Close", n)
	}
}

// TestRoundTripRacingClose: callers keep sending while Close runs: each
// call either succeeds or fails with fault.ErrClosed, and a refused
// call's body is closed when RoundTrip returns.
func TestRoundTripRacingClose(t *testing.T) {
	const callers = 8
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	lt, err := legacy.New(legacy.Config{LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, callers)
	errs := make(chan error, callers)
	var open atomic.Int64 // bodies of refused calls not closed
	for range callers {
		go func() {
			for i := 0; ; i++ {
				req, body := post(srv)
				resp, err := lt.RoundTrip(req)
				if err != nil {
					if !body.closed.Load() {
						open.Add(1)
					}
					errs <- err
					return
				}
				resp.Body.Close()
				if i == 0 {
					started <- struct{}{}
				}
			}
		}()
	}
	for range callers {
		<-started
	}
	lt.Close()
	for range callers {
		if err := <-errs; err != fault.ErrClosed {
			t.Errorf("a call racing Close: %v, want fault.ErrClosed", err)
		}
	}
	if n := open.Load(); n != 0 {
		t.Errorf("%d request bodies were left open", n)
	}
}
