package transport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
)

// Secrets the status tests put in a configuration and a gateway request;
// none may appear on the status page or in its JSON.
const (
	statusURLPassword = "url-pa55word-7f3a"
	statusSetToken    = "set-token-91c2"
	statusForwarded   = "forwarded-value-5d8e"
)

// statusDoc is the JSON of the status handler, as far as the tests read it.
type statusDoc struct {
	Path    string `json:"path"`
	Mode    string `json:"mode"`
	Schemas []struct {
		Name   string `json:"name"`
		URL    string `json:"url"`
		Canary *struct {
			Share     float64 `json:"share"`
			Fallbacks int64   `json:"fallbacks"`
			Legacy    struct {
				Requests int `json:"requests"`
			} `json:"legacy"`
			History []struct {
				Reason string  `json:"reason"`
				Share  float64 `json:"share"`
			} `json:"history"`
		} `json:"canary"`
		Routes []struct {
			Role    string `json:"role"`
			Path    string `json:"path"`
			Engine  string `json:"engine"`
			Breaker string `json:"breaker"`
			Conns   *struct {
				Open int `json:"open"`
				Idle int `json:"idle"`
			} `json:"conns"`
			Addresses []struct {
				Address  string `json:"address"`
				Conns    int    `json:"conns"`
				InFlight int    `json:"in_flight"`
			} `json:"addresses"`
		} `json:"routes"`
	} `json:"schemas"`
	Events []struct {
		Schema string `json:"schema"`
		Kind   string `json:"kind"`
	} `json:"events"`
}

// statusSecretConfig is a config for path with products at srv, its URL holding
// a password, a headers.set token, and a forwarded header.
func statusSecretConfig(path env.Path, srvURL string) env.Config {
	u := strings.Replace(srvURL, "http://", "http://gateway:"+statusURLPassword+"@", 1)
	cfg := withSchema(path, u, func(s *env.SourceSchema) {
		s.ForwardHeaders = []string{"X-Tenant"}
		s.Settings.Headers.Set = map[string]string{"Authorization": "Bearer " + statusSetToken}
		s.Settings.CircuitBreaker = env.BreakerSettings{Enabled: env.Enabled, MinRequests: 1000, OpenFor: time.Minute}
	})
	return cfg
}

// callStatus gets the status with accept and returns the body and its
// Content-Type.
func callStatus(t *testing.T, h http.Handler, target, accept string) ([]byte, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s (Accept %q): %d %s", target, accept, rec.Code, rec.Body)
	}
	return rec.Body.Bytes(), rec.Header().Get("Content-Type")
}

// warm sends n calls for products with a gateway request that carries the
// forwarded secret.
func warm(t *testing.T, inv *transport.Transport, n int) {
	t.Helper()
	gw := httptest.NewRequest(http.MethodPost, "/graphql", nil)
	gw.Header.Set("X-Tenant", statusForwarded)
	for i := range n {
		ctx := transport.WithGatewayRequest(context.Background(), gw.Clone(context.Background()))
		resp, err := inv.Post(ctx, "products", []byte(`{"query":"{ a }"}`))
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// pageCells maps each row of class cls to its data-k cells' text, keyed by
// the row's data-schema and data-role (and data-address).
func pageCells(t *testing.T, page []byte, cls string) map[string]map[string]string {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatalf("parse page: %v", err)
	}
	out := map[string]map[string]string{}
	var walk func(n *html.Node, row map[string]string)
	walk = func(n *html.Node, row map[string]string) {
		if n.Type == html.ElementNode && n.Data == "tr" && attr(n, "class") == cls {
			key := strings.Trim(attr(n, "data-schema")+"/"+attr(n, "data-role")+"/"+attr(n, "data-address"), "/")
			row = map[string]string{}
			out[key] = row
		}
		if n.Type == html.ElementNode && n.Data == "td" && row != nil && attr(n, "data-k") != "" {
			row[attr(n, "data-k")] = strings.TrimSpace(text(n))
		}
		if n.Type == html.ElementNode && (n.Data == "script" || n.Data == "img" || n.Data == "link") {
			for _, a := range []string{"src", "href"} {
				if v := attr(n, a); v != "" {
					t.Errorf("<%s %s=%q>: the page must load nothing", n.Data, a, v)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, row)
		}
	}
	walk(doc, nil)
	return out
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func text(n *html.Node) string {
	if n.Type == html.TextNode {
		return n.Data
	}
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		b.WriteString(text(c))
	}
	return b.String()
}

// TestStatusPageMatchesJSON: for a canary, a sockets path on each engine
// and legacy, the HTML page's schema, route and address rows hold the
// numbers and states of the JSON of the same state, and neither holds a
// secret of the configuration or of a gateway request.
func TestStatusPageMatchesJSON(t *testing.T) {
	tests := []struct {
		name   string
		path   env.Path
		canary bool
		mode   string
		engine string // the serving route's
	}{
		{name: "canary", path: env.PathLegacy, canary: true, mode: "canary"},
		{name: "sockets nethttp", path: env.PathSockets, mode: "plain", engine: env.EngineNetHTTP},
		{name: "sockets h1", path: pathH1, mode: "plain", engine: env.EngineH1},
		{name: "legacy", path: env.PathLegacy, mode: "plain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newSchemaServer(t, nil)
			cfg := statusSecretConfig(tt.path, srv.URL())
			if tt.canary {
				cfg.Canary = env.CanarySettings{Rate: 0.5}
			}
			inv := newInvoker(t, cfg)
			warm(t, inv, 20)
			for _, r := range srv.Requests() {
				if r.Header.Get("X-Tenant") != statusForwarded {
					t.Fatalf("the server did not see the forwarded header: the test proves nothing")
				}
			}
			h := inv.StatusHandler()
			// Nothing moves between the two reads: no call is in flight.
			js, ct := callStatus(t, h, "/status", "application/json")
			if !strings.HasPrefix(ct, "application/json") {
				t.Fatalf("Accept: application/json got %q", ct)
			}
			page, ct := callStatus(t, h, "/status", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
			if !strings.HasPrefix(ct, "text/html") {
				t.Fatalf("a browser's Accept got %q", ct)
			}
			for _, b := range [][]byte{js, page} {
				for _, secret := range []string{statusURLPassword, statusSetToken, statusForwarded} {
					if bytes.Contains(b, []byte(secret)) {
						t.Errorf("the status holds secret %q", secret)
					}
				}
			}
			var doc statusDoc
			if err := json.Unmarshal(js, &doc); err != nil {
				t.Fatalf("status JSON: %v", err)
			}
			if doc.Mode != tt.mode || len(doc.Schemas) != 1 || doc.Schemas[0].Name != "products" {
				t.Fatalf("status JSON: mode %q, schemas %+v", doc.Mode, doc.Schemas)
			}
			s := doc.Schemas[0]
			if strings.Contains(s.URL, "@") || strings.Contains(s.URL, "gateway") {
				t.Errorf("url %q shows userinfo", s.URL)
			}
			if got := s.Routes[0].Engine; got != tt.engine {
				t.Errorf("serving engine %q, want %q", got, tt.engine)
			}
			schemaRows := pageCells(t, page, "schema")
			if len(schemaRows) != len(doc.Schemas) {
				t.Errorf("page has %d schema rows, JSON %d", len(schemaRows), len(doc.Schemas))
			}
			if tt.canary {
				if s.Canary == nil || len(s.Canary.History) == 0 || s.Canary.History[0].Reason != "start" {
					t.Fatalf("canary state %+v: want a history that starts", s.Canary)
				}
				row := schemaRows["products"]
				if want := strconv.FormatFloat(s.Canary.Share*100, 'f', -1, 64) + "%"; row["share"] != want {
					t.Errorf("page share %q, JSON %q", row["share"], want)
				}
				if want := strconv.Itoa(s.Canary.Legacy.Requests) + " req"; !strings.HasPrefix(row["legacy"], want) {
					t.Errorf("page legacy window %q, JSON %d requests", row["legacy"], s.Canary.Legacy.Requests)
				}
				if row["fallbacks"] != strconv.FormatInt(s.Canary.Fallbacks, 10) {
					t.Errorf("page fallbacks %q, JSON %d", row["fallbacks"], s.Canary.Fallbacks)
				}
				if len(doc.Events) == 0 || doc.Events[len(doc.Events)-1].Kind != "canary_start" {
					t.Errorf("events %+v: want the canary's start", doc.Events)
				}
			}
			routeRows := pageCells(t, page, "route")
			addrRows := pageCells(t, page, "address")
			nAddrs := 0
			for _, r := range s.Routes {
				row, ok := routeRows["products/"+r.Role]
				if !ok {
					t.Errorf("page has no route row %s", r.Role)
					continue
				}
				engine := r.Engine
				if engine == "" {
					engine = "-"
				}
				if row["path"] != r.Path || row["engine"] != engine || row["breaker"] != r.Breaker {
					t.Errorf("route %s: page %v, JSON %+v", r.Role, row, r)
				}
				if r.Breaker != "closed" {
					t.Errorf("route %s: breaker %q, want closed", r.Role, r.Breaker)
				}
				if r.Conns != nil && (row["open"] != strconv.Itoa(r.Conns.Open) || row["idle"] != strconv.Itoa(r.Conns.Idle)) {
					t.Errorf("route %s conns: page %v, JSON %+v", r.Role, row, *r.Conns)
				}
				for _, a := range r.Addresses {
					nAddrs++
					row := addrRows["products/"+r.Role+"/"+a.Address]
					if row["conns"] != strconv.Itoa(a.Conns) || row["in_flight"] != strconv.Itoa(a.InFlight) {
						t.Errorf("address %s: page %v, JSON %+v", a.Address, row, a)
					}
				}
			}
			if len(routeRows) != len(s.Routes) || len(addrRows) != nAddrs {
				t.Errorf("page: %d routes, %d addresses; JSON %d, %d", len(routeRows), len(addrRows), len(s.Routes), nAddrs)
			}
			if onSockets(tt.path) && nAddrs == 0 {
				t.Errorf("a sockets pool reported no address")
			}
		})
	}
}

// TestStatusNegotiation: which form each request gets.
func TestStatusNegotiation(t *testing.T) {
	inv := newInvoker(t, config(env.PathLegacy, "products", "http://127.0.0.1:1/graphql"))
	h := inv.StatusHandler()
	tests := []struct {
		target, accept, want string
	}{
		{"/status", "application/json", "application/json"},
		{"/status", "application/graphql-response+json", "application/json"},
		{"/status", "text/html,application/json;q=0.9", "text/html"},
		{"/status", "*/*", "text/html"},
		{"/status", "", "text/html"},
		{"/status", "application/json;q=0, text/plain", "text/html"},
		{"/status?format=json", "text/html", "application/json"},
		{"/status?format=html", "application/json", "text/html"},
	}
	for _, tt := range tests {
		t.Run(tt.target+" "+tt.accept, func(t *testing.T) {
			_, ct := callStatus(t, h, tt.target, tt.accept)
			if !strings.HasPrefix(ct, tt.want) {
				t.Errorf("Content-Type %q, want %s", ct, tt.want)
			}
		})
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/status", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", rec.Code)
	}
}
