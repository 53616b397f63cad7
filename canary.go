package transport

import (
	"context"
	"errors"
	"hash/maphash"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/textproto"
	"net/url"
	"time"

	"github.com/fusiongo/transport/canary"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/bound"
	"github.com/fusiongo/transport/internal/canaryjudge"
	"github.com/fusiongo/transport/internal/gateway"
	"github.com/fusiongo/transport/internal/gqlhttp"
	"github.com/fusiongo/transport/operation"
)

// WithCanaryHook calls hook on every change of a canaried source schema's
// share (FUSION_SOCKETS_TRANSPORT=canary:RATE): its start, a fallback, the
// restart after a cooldown, a growth. hook runs on the goroutine of the
// request whose outcome caused the change, after the change took effect; it
// must not block. The log line and the telemetry are published either way.
func WithCanaryHook(hook func(canary.Event)) Option {
	return func(o *options) { o.canaryHook = hook }
}

// CanaryHandler serves the canary state of inv as JSON: per source schema
// the share in force, the windows of both paths (requests, failures, error
// ratio, latency quantiles), the end of a cooldown, the last change and the
// fallbacks so far. If inv runs no canary (the switch is not canary:RATE) it
// answers every request with 404 and a text that says so and how to start
// one. A gateway mounts it on its admin listener, for example at
// /debug/canary.
func (inv *Transport) CanaryHandler() http.Handler {
	if inv.canary != nil {
		return inv.canary.judge
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no canary: start the gateway with "+env.SwitchVar+"=canary:RATE", http.StatusNotFound)
	})
}

// canaryRouter is the canary of an invoker: which schemas take part, how a
// gateway request is keyed, and the judge. Immutable after New but for the
// judge, which is safe for concurrent use.
type canaryRouter struct {
	inv       *Transport
	judge     *canaryjudge.Judge
	schemas   map[string]bool // nil: every schema
	keyHeader string          // canonical form
	seed      maphash.Seed    // per process: keys are not comparable across gateways
}

func newCanaryRouter(inv *Transport, cfg *env.Config) *canaryRouter {
	cs := cfg.EffectiveCanary()
	c := &canaryRouter{inv: inv, keyHeader: textproto.CanonicalMIMEHeaderKey(cs.KeyHeader), seed: maphash.MakeSeed()}
	if len(cs.Schemas) > 0 {
		c.schemas = map[string]bool{}
		for _, n := range cs.Schemas {
			c.schemas[n] = true
		}
	}
	c.judge = canaryjudge.New(canaryjudge.Settings{
		Rate: cs.Rate, MaxRate: cs.MaxRate, Step: cs.Step, Interval: cs.Interval,
		Window: cs.Window, MinRequests: cs.MinRequests, MaxErrorRatioDelta: cs.MaxErrorRatioDelta, Cooldown: cs.Cooldown,
	}, canaryjudge.Options{Publish: c.publish})
	return c
}

// on reports whether source schema name takes part in the canary. The list
// is the one read at startup: a schema added by a reload takes part when
// the list is empty.
func (c *canaryRouter) on(name string) bool {
	return c != nil && (c.schemas == nil || c.schemas[name])
}

// attach gives each canaried entry of st, before st is stored, its canary
// state: kept by name from the state in force, new for a new schema. The
// state of a schema st no longer has is forgotten.
func (c *canaryRouter) attach(st *state) {
	if c == nil {
		return
	}
	var names []string
	for name, e := range st.schemas {
		if e.candidate != nil && c.on(name) {
			names = append(names, name)
		}
	}
	for name, s := range c.judge.Sync(names) {
		st.schemas[name].judge = s
	}
}

// key returns the number that decides a gateway request's path: a hash of
// its key header when it has one, else a hash of the gateway request
// itself (its *http.Request in ctx), so that every call made with that
// request's context takes the same path at an equal share. Both hashes use
// a random per-process seed. A call without a gateway request gets a
// random key.
func (c *canaryRouter) key(ctx context.Context) uint64 {
	gw := gateway.Request(ctx)
	if gw == nil {
		return rand.Uint64()
	}
	if v := gw.Header[c.keyHeader]; len(v) > 0 && v[0] != "" {
		return maphash.String(c.seed, v[0])
	}
	return maphash.Comparable(c.seed, gw)
}

// publish is the judge's publisher: one log line, the telemetry gauge and
// counter, and the caller's hook.
func (c *canaryRouter) publish(ev canary.Event) {
	level := slog.LevelInfo
	if ev.Reason == canary.Fallback {
		level = slog.LevelWarn
	}
	attrs := []any{"source_schema", ev.Schema, "reason", string(ev.Reason), "from", ev.From, "to", ev.To}
	if ev.Reason != canary.Start {
		attrs = append(attrs,
			"legacy_requests", ev.Legacy.Requests, "legacy_failures", ev.Legacy.Failures,
			"sockets_requests", ev.Sockets.Requests, "sockets_failures", ev.Sockets.Failures)
	}
	if !ev.CooldownUntil.IsZero() {
		attrs = append(attrs, "cooldown_until", ev.CooldownUntil)
	}
	c.inv.log.Log(context.Background(), level, "canary share changed", attrs...)
	c.inv.o.meters.RecordCanaryShare(ev.Schema, ev.To, ev.Reason == canary.Fallback)
	c.inv.recent.canary(ev)
	if h := c.inv.o.canaryHook; h != nil {
		h(ev)
	}
}

// record counts one call's outcome: failed when it returned an error or a
// 5xx. A call whose caller gave up (ctx done) says nothing about the path
// and is not counted.
//
// A call the schema's rate limit refused is not counted either: the limit
// is shared by both paths and says nothing about either (shaping.go).
func record(ctx context.Context, s *canaryjudge.Schema, p canaryjudge.Side, resp *http.Response, err error, start time.Time) {
	if ctx.Err() != nil || rateLimited(err) {
		return
	}
	s.Record(p, err != nil || resp.StatusCode >= 500, start)
}

// canaryPost is Post under a canary: the gateway request's share decides
// the path. A query that failed on sockets without a response is sent
// again on legacy, within what is left of the call's bounds; anything
// else operation.Classify does not call a query (a mutation, a body over
// operation.MaxBodyBytes, or one that servers would read differently), or
// any request that got a response, is not. A call that the sockets side's circuit breaker refused was not
// sent at all: it goes to legacy whatever its kind, and counts as a
// sockets failure in the judge.
func (inv *Transport) canaryPost(ctx context.Context, name string, body []byte) (*http.Response, error) {
	e, err := inv.entryOf(name)
	if err != nil {
		return nil, err
	}
	s := e.judge
	if s == nil || !s.Sockets(inv.canary.key(ctx)) {
		inv.countStartup(e, env.PathLegacy)
		return canaryLegacy(ctx, s, func() (*http.Response, error) { return e.primary.post(ctx, body) })
	}
	inv.countStartup(e, env.PathSockets)
	// One guard over both attempts: a re-send spends what is left of the
	// header and request bounds, it never starts them again.
	g, bctx := e.primary.spanBounds(ctx, http.MethodPost, e.primary.url)
	start := s.Start()
	resp, err := e.candidate.post(bctx, body)
	record(ctx, s, canaryjudge.Sockets, resp, err, start)
	// A call the sockets side's breaker or pending bound refused was not
	// sent: it goes to legacy whatever its kind.
	if !spentOnSockets(bctx, err) && !rateLimited(err) && (refusedOnSockets(err) || operation.Classify(http.MethodPost, e.primary.url.RawQuery, body) == operation.Query) {
		inv.log.Debug("canary: query failed on sockets, sent again on legacy", "source_schema", name, "error", err)
		start = s.Start()
		resp, err = e.primary.post(bctx, body)
		record(ctx, s, canaryjudge.Legacy, resp, err, start)
	}
	return g.finish(resp, err)
}

// canaryLegacy sends a call on legacy and records its outcome, if s is
// the schema's canary state.
func canaryLegacy(ctx context.Context, s *canaryjudge.Schema, send func() (*http.Response, error)) (*http.Response, error) {
	if s == nil {
		return send()
	}
	start := s.Start()
	resp, err := send()
	record(ctx, s, canaryjudge.Legacy, resp, err, start)
	return resp, err
}

// canaryDo is Do under a canary, as canaryPost. A request that failed on
// sockets goes again on legacy when operation.Classify calls it a query (a
// GET whose URL holds a query or no document, a POST whose body holds
// one) and its body, if any, can be read again (GetBody).
func (inv *Transport) canaryDo(ctx context.Context, name string, req *http.Request) (*http.Response, error) {
	e, err := inv.entryOf(name)
	if err != nil {
		gqlhttp.CloseBody(req)
		return nil, err
	}
	s := e.judge
	if s == nil || !s.Sockets(inv.canary.key(ctx)) {
		inv.countStartup(e, env.PathLegacy)
		return canaryLegacy(ctx, s, func() (*http.Response, error) { return e.primary.do(ctx, req) })
	}
	inv.countStartup(e, env.PathSockets)
	g, bctx := e.primary.spanBounds(ctx, req.Method, req.URL)
	start := s.Start()
	resp, err := e.candidate.do(bctx, req)
	record(ctx, s, canaryjudge.Sockets, resp, err, start)
	if !spentOnSockets(bctx, err) && !rateLimited(err) {
		again, ok := resendable(req)
		if !ok && refusedOnSockets(err) {
			// Refused unsent: any kind goes, with a fresh body.
			var rerr error
			again, rerr = backend.Rewind(req)
			ok = rerr == nil
		}
		if ok {
			inv.log.Debug("canary: query failed on sockets, sent again on legacy", "source_schema", name, "error", err)
			start = s.Start()
			resp, err = e.primary.do(bctx, again)
			record(ctx, s, canaryjudge.Legacy, resp, err, start)
		}
	}
	return g.finish(resp, err)
}

// spentOnSockets reports whether a sockets attempt that ended with err
// leaves nothing to send again on legacy: it succeeded, or the call's
// bounds are spent (bctx ended), or it ran out of a bound itself (a
// header or request timeout, which the path may notice a moment before
// bctx's own timer: the same bound, spent).
func spentOnSockets(bctx context.Context, err error) bool {
	if err == nil || bctx.Err() != nil {
		return true
	}
	// Only the call's own bounds: a dial timeout (connect_timeout) sent
	// nothing and leaves the bounds for legacy.
	var hte *fault.HeaderTimeoutError
	var rte *fault.RequestTimeoutError
	return errors.As(err, &hte) || errors.As(err, &rte)
}

// spannedCall is the bounds of a call that may take two attempts (a
// canary's sockets attempt and its re-send on legacy): one guard over
// both, so that the second gets only what the first left.
type spannedCall struct {
	guard bound.Guard
	t     bound.Target
}

// spanBounds starts the bounds of r (header_timeout, request_timeout) over
// a call of several attempts, and returns the context to send them with.
// The header bound is the whole of r's, even where r's transport times the
// header itself: each attempt still runs its own bounds inside.
func (r *route) spanBounds(ctx context.Context, method string, u *url.URL) (*spannedCall, context.Context) {
	c := &spannedCall{t: bound.Target{Schema: r.name, Method: method, URL: u}}
	return c, c.guard.Begin(ctx, c.t, r.headerTimeout, r.requestTimeout)
}

// finish ends the call's bounds with its last attempt's result: the
// response body keeps the bounds alive until it is closed; an error that
// the bounds caused says so.
func (c *spannedCall) finish(resp *http.Response, err error) (*http.Response, error) {
	resp, ferr := c.guard.Finish(resp, err)
	if ferr == nil || err != nil {
		return resp, ferr // err already names the schema
	}
	return result(c.t, resp, ferr)
}

// resendable returns a copy of req to send again on legacy, if
// operation.Classify calls it a query: by its method, its URL's query
// string and its body, which GetBody gives again (at most
// operation.MaxBodyBytes of it are read). A request with a body and no
// GetBody is not sent again.
func resendable(req *http.Request) (*http.Request, bool) {
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		if req.GetBody == nil {
			return nil, false
		}
		rc, err := req.GetBody()
		if err != nil {
			return nil, false
		}
		body, err = io.ReadAll(io.LimitReader(rc, operation.MaxBodyBytes+1))
		rc.Close()
		if err != nil {
			return nil, false
		}
	}
	if operation.Classify(req.Method, req.URL.RawQuery, body) != operation.Query {
		return nil, false
	}
	again, err := backend.Rewind(req)
	return again, err == nil
}

// refusedOnSockets reports whether the sockets side refused a call
// unsent: its circuit breaker was open (fault.ErrCircuitOpen) or its pool had
// max_pending_requests waiting (fault.ErrOverloaded). Legacy may serve it.
func refusedOnSockets(err error) bool {
	return errors.Is(err, fault.ErrCircuitOpen) || errors.Is(err, fault.ErrOverloaded)
}
