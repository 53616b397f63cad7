package transport_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-feature/go-sdk/openfeature"
	"github.com/open-feature/go-sdk/openfeature/isolated"
	"github.com/open-feature/go-sdk/openfeature/memprovider"
	oftesting "github.com/open-feature/go-sdk/openfeature/testing"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/featureflag"
)

// userHeader is the gateway request header the rollout tests take the
// targeting key from.
const userHeader = "X-User-Id"

// rolloutFlag is the in-memory definition of the rollout flag whose
// default variant gives value.
func rolloutFlag(value string) memprovider.InMemoryFlag {
	return memprovider.InMemoryFlag{Key: transport.DefaultRolloutFlag, State: memprovider.Enabled, DefaultVariant: "v",
		Variants: map[string]any{"v": value}}
}

// killFlag is the in-memory definition of the kill switch flag.
func killFlag(on bool) memprovider.InMemoryFlag {
	variant := "off"
	if on {
		variant = "on"
	}
	return memprovider.InMemoryFlag{Key: transport.DefaultKillFlag, State: memprovider.Enabled, DefaultVariant: variant,
		Variants: map[string]any{"on": true, "off": false}}
}

// flagSet is the flags of a test: the rollout flag giving value, the kill
// switch as kill says.
func flagSet(value string, kill bool) map[string]memprovider.InMemoryFlag {
	return map[string]memprovider.InMemoryFlag{transport.DefaultRolloutFlag: rolloutFlag(value), transport.DefaultKillFlag: killFlag(kill)}
}

// flagClient starts an OpenFeature API of the test's own (shut down when
// the test ends, so that no SDK goroutine outlives it) with provider set
// and ready, and returns a client of it.
func flagClient(t *testing.T, provider openfeature.FeatureProvider) *openfeature.Client {
	t.Helper()
	api := isolated.NewAPI()
	t.Cleanup(func() { api.Shutdown(context.Background()) })
	if err := api.SetProviderAndWait(context.Background(), provider); err != nil {
		t.Fatalf("SetProviderAndWait: %v", err)
	}
	return api.NewClient()
}

// toldFlags are RolloutFlags that say on told each time the transport has
// taken a change (its callback returned): a test waits on it instead of
// sleeping.
type toldFlags struct {
	transport.RolloutFlags
	told chan struct{}
}

func (f toldFlags) OnChange(changed func()) func() {
	return f.RolloutFlags.OnChange(func() {
		changed()
		f.told <- struct{}{}
	})
}

// memFlags is an in-memory provider with flags behind a transport: the
// provider to change, and told.
type memFlags struct {
	provider *memprovider.InMemoryProvider
	told     chan struct{}
}

// newRolloutInvoker builds an invoker for cfg whose rollout reads flags
// from an in-memory provider, waits for the provider's ready event to
// reach it, and returns both.
func newRolloutInvoker(t *testing.T, cfg env.Config, flags map[string]memprovider.InMemoryFlag, o transport.RolloutOptions, opts ...transport.Option) (*transport.Transport, *memFlags) {
	t.Helper()
	m := &memFlags{provider: memprovider.NewInMemoryProvider(flags), told: make(chan struct{}, 16)}
	client := flagClient(t, m.provider)
	if o.Timeout == 0 {
		o.Timeout = gapGuard // the tests that are not about the bound never meet it
	}
	inv := newInvoker(t, cfg, append(opts, transport.WithRollout(toldFlags{featureflag.OpenFeature(client), m.told}, o))...)
	m.wait(t) // the ready event, which a handler registered on a ready provider gets at once
	return inv, m
}

// set replaces the flags and waits until the transport has taken the
// change.
func (m *memFlags) set(t *testing.T, flags map[string]memprovider.InMemoryFlag) {
	t.Helper()
	m.provider.UpdateFlags(flags)
	m.wait(t)
}

func (m *memFlags) wait(t *testing.T) {
	t.Helper()
	select {
	case <-m.told:
	case <-time.After(gapGuard):
		t.Fatal("the transport was not told of the flags' change")
	}
}

// pathServer is a source schema that answers with the path that served
// each request ({"data":{"path":"legacy"}} or "sockets": legacy asks for
// gzip, sockets does not), and holds each request whose body says "hold"
// until release is closed, after saying on held which path it came by.
type pathServer struct {
	*schemaServer
	held    chan string
	release chan struct{}
	once    sync.Once
}

// releaseHeld lets every held request go on, once.
func (s *pathServer) releaseHeld() { s.once.Do(func() { close(s.release) }) }

func newPathServer(t *testing.T) *pathServer {
	s := &pathServer{held: make(chan string, 16), release: make(chan struct{})}
	t.Cleanup(s.releaseHeld)
	s.schemaServer = newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		path := "legacy"
		if viaSockets(r) {
			path = "sockets"
		}
		if strings.Contains(string(body), "hold") {
			s.held <- path
			<-s.release
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"data":{"path":%q}}`, path)
	})
	return s
}

// servedBy sends one Post with ctx and returns the path that served it, as
// the caller's answer says.
func servedBy(t *testing.T, inv transport.Invoker, ctx context.Context, schema string) string {
	t.Helper()
	resp, err := inv.Post(ctx, schema, []byte(`{"query":"{ path }","operationName":"Path"}`))
	if err != nil {
		t.Fatalf("Post %s: %v", schema, err)
	}
	return pathOf(t, readAll(t, resp))
}

func pathOf(t *testing.T, body string) string {
	t.Helper()
	var a struct {
		Data struct{ Path string }
	}
	if err := json.Unmarshal([]byte(body), &a); err != nil || a.Data.Path == "" {
		t.Fatalf("answer %q names no path (%v)", body, err)
	}
	return a.Data.Path
}

// userCtx is a gateway request of user.
func userCtx(user string) context.Context {
	return gatewayCtx(userHeader, user)
}

// flagValue is the rollout flag's value that sends everything to path.
func flagValue(path string) string {
	if path == "sockets" {
		return "1"
	}
	return "0"
}

// TestRolloutFlagMovesNewGatewayRequests: a flag moved at runtime moves the
// gateway requests that start after it, and no call in flight. A call held
// at the source schema finishes on the path it started on; a gateway
// request that decided before the move keeps its path for its later calls;
// the next gateway request takes the other path. Both directions, on every
// startup path.
func TestRolloutFlagMovesNewGatewayRequests(t *testing.T) {
	for _, p := range paths {
		for _, dir := range [][2]string{{"sockets", "legacy"}, {"legacy", "sockets"}} {
			t.Run(fmt.Sprintf("%s/%s-to-%s", p, dir[0], dir[1]), func(t *testing.T) {
				from, to := dir[0], dir[1]
				srv := newPathServer(t)
				inv, flags := newRolloutInvoker(t, config(p, "products", srv.URL()), flagSet(flagValue(from), false),
					transport.RolloutOptions{TargetingHeader: userHeader})

				// A gateway request holds a call at the source schema.
				early := userCtx("alice")
				inFlight := postAsync(inv, early, "products", `{"query":"{ hold }"}`)
				if got := <-srv.held; got != from {
					t.Fatalf("the held call came by %s, want %s", got, from)
				}

				flags.set(t, flagSet(flagValue(to), false))

				if got := servedBy(t, inv, userCtx("alice"), "products"); got != to {
					t.Errorf("a gateway request after the move was served by %s, want %s", got, to)
				}
				if got := servedBy(t, inv, early, "products"); got != from {
					t.Errorf("the early gateway request's next call was served by %s, want %s: it decided before the move", got, from)
				}
				srv.releaseHeld()
				res := <-inFlight
				if res.err != nil {
					t.Fatalf("the held call failed: %v", res.err)
				}
				if got := pathOf(t, res.body); got != from {
					t.Errorf("the held call finished on %s, want %s, where it started", got, from)
				}
			})
		}
	}
}

// TestRolloutKillSwitch: pulling the kill switch sends every new call to
// legacy at once, the later calls of a gateway request that the flag put
// on sockets included, while a call in flight on sockets finishes there;
// releasing it gives the flag back its say.
func TestRolloutKillSwitch(t *testing.T) {
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			srv := newPathServer(t)
			inv, flags := newRolloutInvoker(t, config(p, "products", srv.URL()), flagSet("1", false), transport.RolloutOptions{TargetingHeader: userHeader})

			early := userCtx("bob")
			inFlight := postAsync(inv, early, "products", `{"query":"{ hold }"}`)
			if got := <-srv.held; got != "sockets" {
				t.Fatalf("the held call came by %s, want sockets", got)
			}

			flags.set(t, flagSet("1", true))
			if got := servedBy(t, inv, early, "products"); got != "legacy" {
				t.Errorf("with the kill switch pulled, a later call of a gateway request on sockets was served by %s, want legacy", got)
			}
			if got := servedBy(t, inv, userCtx("carol"), "products"); got != "legacy" {
				t.Errorf("with the kill switch pulled, a new gateway request was served by %s, want legacy", got)
			}
			srv.releaseHeld()
			if res := <-inFlight; res.err != nil || pathOf(t, res.body) != "sockets" {
				t.Errorf("the held call: %q, %v; want it finished on sockets", res.body, res.err)
			}

			flags.set(t, flagSet("1", false))
			if got := servedBy(t, inv, userCtx("dave"), "products"); got != "sockets" {
				t.Errorf("after the kill switch was released, a gateway request was served by %s, want sockets", got)
			}
			st := rolloutStatus(t, inv)
			if by := st.Schemas[0].Rollout.BySource; by["kill"] != 2 || by["flag"] != 2 {
				t.Errorf("status counts by source %v, want 2 by kill (the two calls after the pull) and 2 by flag", by)
			}
			rec := httptest.NewRecorder()
			inv.StatusHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/?format=html", nil))
			page := rec.Body.String()
			for _, want := range []string{`<tr class="rollout" data-schema="products">`, `<td class="n" data-k="sockets_share">50%</td>`, `<td data-k="source">flag</td>`, `not pulled`} {
				if !strings.Contains(page, want) {
					t.Errorf("the status page lacks %s", want)
				}
			}
		})
	}
}

// TestRolloutStickiness: under canary:30% keyed by a user header, each of
// 1,000 users has every call of every one of its gateway requests on one
// path, and about 30% of the users are on sockets.
func TestRolloutStickiness(t *testing.T) {
	const users, share = 1000, 0.3
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			srv := newPathServer(t)
			inv, _ := newRolloutInvoker(t, config(p, "products", srv.URL(), "reviews", srv.URL()), flagSet("canary:30%", false),
				transport.RolloutOptions{TargetingHeader: userHeader})
			onSockets := 0
			for u := range users {
				user := fmt.Sprintf("user-%d", u)
				first := ""
				for g := range 2 { // two gateway requests, two calls each, on two schemas
					ctx := userCtx(user)
					for _, schema := range []string{"products", "reviews"} {
						got := servedBy(t, inv, ctx, schema)
						if first == "" {
							first = got
						} else if got != first {
							t.Fatalf("%s: gateway request %d's call to %s was served by %s, an earlier call by %s", user, g, schema, got, first)
						}
					}
				}
				if first == "sockets" {
					onSockets++
				}
			}
			t.Logf("%d of %d users on sockets", onSockets, users)
			if got := float64(onSockets) / users; got < share-0.05 || got > share+0.05 {
				t.Errorf("%d of %d users on sockets (%.3f), want about %.2f", onSockets, users, got, share)
			}
		})
	}
}

// TestRolloutFallsBack: when the flag cannot decide, the startup switch
// does (here sockets, the flag saying legacy where it can), the status
// page says why, each fallback is counted, and logged once until the
// flags change.
func TestRolloutFallsBack(t *testing.T) {
	tests := []struct {
		name   string
		flags  map[string]memprovider.InMemoryFlag
		reason string
	}{
		{"flag not found", map[string]memprovider.InMemoryFlag{transport.DefaultKillFlag: killFlag(false)}, "provider_error"},
		{"not the grammar", flagSet("sideways", false), "invalid_variant"},
		{"unknown schema", flagSet("products,inventory", false), "invalid_variant"},
		{"shadow", flagSet("shadow:0.05", false), "not_built"},
		{"disabled", map[string]memprovider.InMemoryFlag{transport.DefaultRolloutFlag: {Key: transport.DefaultRolloutFlag, State: memprovider.Disabled,
			DefaultVariant: "v", Variants: map[string]any{"v": "0"}}, transport.DefaultKillFlag: killFlag(false)}, "no_value"},
	}
	for _, tt := range tests {
		for _, p := range []env.Path{env.PathSockets, pathH1} {
			t.Run(tt.name+"/"+string(p), func(t *testing.T) {
				srv := newPathServer(t)
				var log logBuffer
				inv, flags := newRolloutInvoker(t, config(p, "products", srv.URL()), tt.flags, transport.RolloutOptions{TargetingHeader: userHeader},
					transport.WithLogger(slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelWarn}))))
				for u := range 3 {
					if got := servedBy(t, inv, userCtx(fmt.Sprint("u", u)), "products"); got != "sockets" {
						t.Errorf("gateway request %d was served by %s, want sockets, the startup switch", u, got)
					}
				}
				st := rolloutStatus(t, inv)
				if n := st.Rollout.Fallbacks[tt.reason]; n != 3 {
					t.Errorf("fallbacks %v, want 3 for %s", st.Rollout.Fallbacks, tt.reason)
				}
				if d := st.Schemas[0].Rollout.Decision; d == nil || d.Source != "startup" || d.Fallback != tt.reason {
					t.Errorf("last decision %+v, want the startup switch's for %s", d, tt.reason)
				}
				if n := strings.Count(log.String(), "the flag cannot decide"); n != 1 {
					t.Errorf("logged the fallback %d times, want once:\n%s", n, log.String())
				}

				// The flags change to a value the rollout can use: the flag decides again.
				flags.set(t, flagSet("0", false))
				if got := servedBy(t, inv, userCtx("u9"), "products"); got != "legacy" {
					t.Errorf("once the flag gives 0, a gateway request was served by %s, want legacy", got)
				}
			})
		}
	}
}

// slowProvider is an in-memory provider whose string evaluations for the
// targeting key "slow" wait until release is closed.
type slowProvider struct {
	*memprovider.InMemoryProvider
	started chan struct{}
	release chan struct{}
}

func (p slowProvider) StringEvaluation(ctx context.Context, flag string, def string, fc openfeature.FlattenedContext) openfeature.StringResolutionDetail {
	if fc[openfeature.TargetingKey] == "slow" {
		p.started <- struct{}{}
		<-p.release
	}
	return p.InMemoryProvider.StringEvaluation(ctx, flag, def, fc)
}

// TestRolloutSlowEvaluationFallsBack: a gateway request whose evaluation
// takes longer than the bound is served as the startup switch says, and
// counted; other users' evaluations are not held up by it.
func TestRolloutSlowEvaluationFallsBack(t *testing.T) {
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			srv := newPathServer(t)
			slow := slowProvider{memprovider.NewInMemoryProvider(flagSet("1", false)), make(chan struct{}, 1), make(chan struct{})}
			client := flagClient(t, slow)
			defer close(slow.release) // before the API shuts down: the evaluation goroutine ends
			inv := newInvoker(t, config(p, "products", srv.URL()), transport.WithRollout(featureflag.OpenFeature(client),
				transport.RolloutOptions{TargetingHeader: userHeader, Timeout: time.Millisecond}))
			startup := "legacy"
			if onSockets(p) {
				startup = "sockets"
			}
			if got := servedBy(t, inv, userCtx("slow"), "products"); got != startup {
				t.Errorf("the slow gateway request was served by %s, want %s, the startup switch", got, startup)
			}
			<-slow.started // it was the provider that held it
			if n := rolloutStatus(t, inv).Rollout.Fallbacks["timeout"]; n != 1 {
				t.Errorf("%d timeouts counted, want 1", n)
			}
		})
	}
}

// TestRolloutProviderNotReady: while the provider starts, the startup
// switch serves; the provider's ready event gives the flag its say.
func TestRolloutProviderNotReady(t *testing.T) {
	srv := newPathServer(t)
	starting := &startingProvider{InMemoryProvider: memprovider.NewInMemoryProvider(flagSet("0", false)), ready: make(chan struct{})}
	api := isolated.NewAPI()
	t.Cleanup(func() { api.Shutdown(context.Background()) })
	if err := api.SetProvider(context.Background(), starting); err != nil {
		t.Fatal(err)
	}
	told := make(chan struct{}, 16)
	inv := newInvoker(t, config(env.PathSockets, "products", srv.URL()), transport.WithRollout(toldFlags{featureflag.OpenFeature(api.NewClient()), told},
		transport.RolloutOptions{TargetingHeader: userHeader, Timeout: gapGuard}))
	if got := servedBy(t, inv, userCtx("u"), "products"); got != "sockets" {
		t.Errorf("before the provider is ready a gateway request was served by %s, want sockets, the startup switch", got)
	}
	if d := rolloutStatus(t, inv).Schemas[0].Rollout.Decision; d == nil || d.Fallback != "provider_error" || !strings.Contains(d.Cause, "PROVIDER_NOT_READY") {
		t.Errorf("decision %+v, want a provider_error fallback naming PROVIDER_NOT_READY", d)
	}
	close(starting.ready)
	<-told
	if got := servedBy(t, inv, userCtx("u"), "products"); got != "legacy" {
		t.Errorf("once the provider is ready a gateway request was served by %s, want legacy, the flag's", got)
	}
}

// startingProvider is an in-memory provider whose Init waits for ready.
type startingProvider struct {
	*memprovider.InMemoryProvider
	ready chan struct{}
}

func (p *startingProvider) Init(openfeature.EvaluationContext) error {
	<-p.ready
	return nil
}

func (p *startingProvider) Shutdown() {}

// TestRolloutTestProvider: the SDK's test provider, with flags scoped to
// the test, drives the rollout; a list variant puts the schemas it names
// on sockets and the rest on legacy, for every call of the gateway
// request, whichever schema it began with.
func TestRolloutTestProvider(t *testing.T) {
	tp := oftesting.NewTestProvider()
	client := flagClient(t, tp)
	ctx := tp.UsingFlags(t, flagSet("reviews", false))
	products, reviews := newPathServer(t), newPathServer(t)
	inv := newInvoker(t, config(env.PathLegacy, "products", products.URL(), "reviews", reviews.URL()),
		transport.WithRollout(featureflag.OpenFeature(client), transport.RolloutOptions{TargetingHeader: userHeader, Timeout: gapGuard}))
	gw := httptest.NewRequest(http.MethodPost, "/graphql", nil)
	gw.Header.Set(userHeader, "erin")
	gctx := transport.WithGatewayRequest(ctx, gw) // the test provider finds the test's flags in ctx
	for _, c := range []struct{ schema, want string }{{"products", "legacy"}, {"reviews", "sockets"}, {"products", "legacy"}} {
		if got := servedBy(t, inv, gctx, c.schema); got != c.want {
			t.Errorf("%s was served by %s, want %s", c.schema, got, c.want)
		}
	}
	d := rolloutStatus(t, inv).Schemas[1].Rollout.Decision
	if d == nil || d.Source != "flag" || d.Value != "reviews" || d.Variant != "v" || d.Reason != "STATIC" {
		t.Errorf("reviews' decision %+v, want the flag's variant v (reviews), reason STATIC", d)
	}
}

// rolloutDoc is the part of the status page's JSON the rollout tests read.
type rolloutDoc struct {
	Rollout struct {
		Killed    bool             `json:"killed"`
		Fallbacks map[string]int64 `json:"fallbacks"`
	} `json:"rollout"`
	Schemas []struct {
		Name    string `json:"name"`
		Rollout struct {
			Legacy   int64            `json:"legacy"`
			Sockets  int64            `json:"sockets"`
			BySource map[string]int64 `json:"by_source"`
			Decision *struct {
				Source, Value, Variant, Reason, Fallback, Cause string
			} `json:"decision"`
		} `json:"rollout"`
		Routes []struct{ Role, Path string } `json:"routes"`
	} `json:"schemas"`
}

// rolloutStatus reads inv's status page as JSON.
func rolloutStatus(t *testing.T, inv *transport.Transport) rolloutDoc {
	t.Helper()
	rec := httptest.NewRecorder()
	inv.StatusHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/?format=json", nil))
	var doc rolloutDoc
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatalf("status JSON: %v\n%s", err, rec.Body.String())
	}
	return doc
}

// countingFlag is a rollout flag that counts its evaluations and gives
// "1" (sockets) for the targeting key alice on products with operation
// Path, "0" otherwise: it checks the evaluation context on the wire's
// behalf.
func countingFlag(evaluations *atomic.Int32) memprovider.InMemoryFlag {
	eval := func(f memprovider.InMemoryFlag, fc openfeature.FlattenedContext) (any, openfeature.ProviderResolutionDetail) {
		evaluations.Add(1)
		if fc[openfeature.TargetingKey] == "alice" && fc[featureflag.AttrSourceSchema] == "products" && fc[featureflag.AttrOperationName] == "Path" {
			return "1", openfeature.ProviderResolutionDetail{Variant: "on", Reason: openfeature.TargetingMatchReason}
		}
		return "0", openfeature.ProviderResolutionDetail{Variant: "off", Reason: openfeature.DefaultReason}
	}
	return memprovider.InMemoryFlag{Key: transport.DefaultRolloutFlag, State: memprovider.Enabled, DefaultVariant: "off",
		Variants: map[string]any{"on": "1", "off": "0"}, ContextEvaluator: &eval}
}

// TestRolloutEvaluatedOncePerGatewayRequest: the flag sees the targeting
// key, the source schema and the operation name of the gateway request's
// first call, and is evaluated once for all its calls (on every schema),
// and not again for a gateway request with the same evaluation context
// until the flags change.
func TestRolloutEvaluatedOncePerGatewayRequest(t *testing.T) {
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			srv := newPathServer(t)
			var evaluations atomic.Int32
			flags := map[string]memprovider.InMemoryFlag{transport.DefaultRolloutFlag: countingFlag(&evaluations), transport.DefaultKillFlag: killFlag(false)}
			inv, m := newRolloutInvoker(t, config(p, "products", srv.URL(), "reviews", srv.URL()), flags, transport.RolloutOptions{TargetingHeader: userHeader})

			alice := userCtx("alice")
			for range 3 {
				for _, schema := range []string{"products", "reviews"} {
					if got := servedBy(t, inv, alice, schema); got != "sockets" {
						t.Errorf("alice's call to %s was served by %s, want sockets", schema, got)
					}
				}
			}
			if got := servedBy(t, inv, userCtx("bob"), "products"); got != "legacy" {
				t.Errorf("bob's call was served by %s, want legacy", got)
			}
			if got := servedBy(t, inv, userCtx("alice"), "reviews"); got != "legacy" {
				t.Errorf("alice's gateway request that began on reviews was served by %s, want legacy", got)
			}
			if n := evaluations.Load(); n != 3 {
				t.Errorf("%d evaluations for three evaluation contexts, want 3", n)
			}
			servedBy(t, inv, userCtx("alice"), "products") // an evaluation context seen: its answer is kept
			if n := evaluations.Load(); n != 3 {
				t.Errorf("%d evaluations after a gateway request with a kept answer, want 3", n)
			}
			m.set(t, flags) // a change drops every answer kept
			servedBy(t, inv, userCtx("alice"), "products")
			if n := evaluations.Load(); n != 4 {
				t.Errorf("%d evaluations after the flags changed, want 4", n)
			}
		})
	}
}

// TestRolloutEveryAPI: Do (its URL's operationName read), PostFunc and the
// Client follow the flag as Post does.
func TestRolloutEveryAPI(t *testing.T) {
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			srv := newPathServer(t)
			var evaluations atomic.Int32
			flags := map[string]memprovider.InMemoryFlag{transport.DefaultRolloutFlag: countingFlag(&evaluations), transport.DefaultKillFlag: killFlag(false)}
			inv, _ := newRolloutInvoker(t, config(p, "products", srv.URL()), flags, transport.RolloutOptions{TargetingHeader: userHeader})
			send := map[string]func(ctx context.Context) (string, error){
				"Do": func(ctx context.Context) (string, error) {
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL()+"?query=%7Bpath%7D&operationName=Path", nil)
					resp, err := inv.Do(ctx, "products", req)
					if err != nil {
						return "", err
					}
					return readAll(t, resp), nil
				},
				"PostFunc": func(ctx context.Context) (body string, err error) {
					err = inv.PostFunc(ctx, "products", []byte(`{"query":"{ path }","operationName":"Path"}`), func(resp *http.Response) error {
						b, err := io.ReadAll(resp.Body)
						body = string(b)
						return err
					})
					return body, err
				},
				"Client": func(ctx context.Context) (string, error) {
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL(), strings.NewReader(`{"query":"{ path }","operationName":"Path"}`))
					resp, err := inv.Client().Do(req)
					if err != nil {
						return "", err
					}
					return readAll(t, resp), nil
				},
			}
			for name, f := range send {
				for user, want := range map[string]string{"alice": "sockets", "bob": "legacy"} {
					body, err := f(userCtx(user))
					if err != nil {
						t.Fatalf("%s for %s: %v", name, user, err)
					}
					// The Client's Do carries no operation name in its URL:
					// alice's context lacks it, and she gets legacy there.
					if name == "Client" {
						want = "legacy"
					}
					if got := pathOf(t, body); got != want {
						t.Errorf("%s for %s was served by %s, want %s", name, user, got, want)
					}
				}
			}
		})
	}
}

// TestRolloutReload: a reload keeps the rollout's routes and checks the
// variants against the schemas in force: a list naming a schema the
// reload added is honoured, one naming a schema it removed falls back.
func TestRolloutReload(t *testing.T) {
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			products, reviews := newPathServer(t), newPathServer(t)
			cfg := config(p, "products", products.URL())
			inv, m := newRolloutInvoker(t, cfg, flagSet("reviews", false), transport.RolloutOptions{TargetingHeader: userHeader})
			servedBy(t, inv, userCtx("u1"), "products")
			if d := rolloutStatus(t, inv).Schemas[0].Rollout.Decision; d == nil || d.Fallback != "invalid_variant" {
				t.Errorf("before reviews is configured, decision %+v, want invalid_variant", d)
			}
			if err := inv.Reload(config(p, "products", products.URL(), "reviews", reviews.URL())); err != nil {
				t.Fatal(err)
			}
			ctx := userCtx("u2")
			if got := servedBy(t, inv, ctx, "reviews"); got != "sockets" {
				t.Errorf("after the reload added reviews, reviews was served by %s, want sockets", got)
			}
			if got := servedBy(t, inv, ctx, "products"); got != "legacy" {
				t.Errorf("after the reload added reviews, products was served by %s, want legacy", got)
			}
			m.set(t, flagSet("1", false))
			if got := servedBy(t, inv, userCtx("u3"), "products"); got != "sockets" {
				t.Errorf("products after the flag went to 1 was served by %s, want sockets", got)
			}
			roles := map[string]bool{}
			for _, r := range rolloutStatus(t, inv).Schemas[0].Routes {
				roles[r.Role+" "+r.Path] = true
			}
			if len(roles) != 2 || !roles["rollout sockets"] && !roles["rollout legacy"] {
				t.Errorf("products' routes %v, want its primary and a rollout route on the other path", roles)
			}
		})
	}
}

// TestRolloutTraceEvent: with featureflag.TraceHook on the client, the
// gateway request's span gets the rollout's evaluation as a
// feature_flag.evaluation event, with its variant and reason.
func TestRolloutTraceEvent(t *testing.T) {
	srv := newPathServer(t)
	m := memprovider.NewInMemoryProvider(flagSet("1", false))
	client := flagClient(t, m)
	client.AddHooks(featureflag.TraceHook())
	inv := newInvoker(t, config(env.PathLegacy, "products", srv.URL()),
		transport.WithRollout(featureflag.OpenFeature(client), transport.RolloutOptions{TargetingHeader: userHeader, Timeout: gapGuard}))
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	ctx, span := tp.Tracer("gateway").Start(context.Background(), "POST /graphql")
	gw := httptest.NewRequest(http.MethodPost, "/graphql", nil)
	gw.Header.Set(userHeader, "frank")
	ctx = transport.WithGatewayRequest(ctx, gw)
	for range 2 {
		if got := servedBy(t, inv, ctx, "products"); got != "sockets" {
			t.Errorf("served by %s, want sockets", got)
		}
	}
	span.End()
	var events []string
	for _, ev := range rec.Ended()[0].Events() {
		attrs := map[string]string{}
		for _, kv := range ev.Attributes {
			attrs[string(kv.Key)] = kv.Value.Emit()
		}
		if attrs["feature_flag.key"] == transport.DefaultRolloutFlag {
			events = append(events, ev.Name+" "+attrs["feature_flag.result.variant"]+" "+attrs["feature_flag.result.reason"]+" "+attrs["feature_flag.context.id"])
		}
	}
	if want := []string{"feature_flag.evaluation v static frank"}; fmt.Sprint(events) != fmt.Sprint(want) {
		t.Errorf("the gateway span's rollout events %q, want %q: one evaluation for the gateway request's two calls", events, want)
	}
}

// TestRolloutRefused: New refuses, by name, what the rollout cannot
// honour, rather than running without it.
func TestRolloutRefused(t *testing.T) {
	cfg := config(env.PathLegacy, "products", "http://127.0.0.1:1/graphql")
	client := flagClient(t, memprovider.NewInMemoryProvider(flagSet("1", false)))
	for _, tt := range []struct {
		opt  transport.Option
		want string
	}{
		{transport.WithRollout(nil, transport.RolloutOptions{}), "WithRollout: the RolloutFlags are nil"},
		{transport.WithRollout(featureflag.OpenFeature(client), transport.RolloutOptions{TargetingHeader: "X User"}), `RolloutOptions.TargetingHeader "X User" is not a header name`},
	} {
		inv, err := transport.New(cfg, transport.WithLogger(quiet), tt.opt)
		if err == nil {
			inv.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New: %v, want an error saying %s", err, tt.want)
		}
	}
}
