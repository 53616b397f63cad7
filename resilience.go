package transport

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/setting"
	"github.com/fusiongo/transport/middleware"
)

// WithResilienceHook calls hook on every resilience event of every source
// schema: a circuit breaker's change of state, a retry or hedge that the
// retry budget refused, a hedge sent, a hedge that won. hook runs on the
// goroutine of the request that caused the event (a breaker's change with
// the breaker's lock held): it must be quick and must not block. The log
// lines and the telemetry are published either way.
func WithResilienceHook(hook func(ResilienceEvent)) Option {
	return func(o *options) { o.resilienceHook = hook }
}

// ResilienceKind is the kind of a ResilienceEvent.
type ResilienceKind string

// The kinds of ResilienceEvent.
const (
	// BreakerStateChanged: a circuit breaker went from From to To.
	BreakerStateChanged ResilienceKind = "breaker_state_changed"
	// BudgetExhausted: a retry or a hedge was not made, the schema's retry
	// budget being spent; the failure went back as it was.
	BudgetExhausted ResilienceKind = "budget_exhausted"
	// HedgeSent: a query without response headers after the hedge delay
	// was sent once more; reported when that attempt ended (a hedge that
	// lost, shortly after the caller got its answer). A hedge that the
	// breaker or the rate limit refused unsent is not one.
	HedgeSent ResilienceKind = "hedge_sent"
	// HedgeWon: a hedge's response was the one returned to the caller.
	HedgeWon ResilienceKind = "hedge_won"
	// AddressEjected: an address of the schema failed
	// outlier_detection.consecutive_failures times in a row and gets no
	// request for For (sockets path).
	AddressEjected ResilienceKind = "address_ejected"
	// AddressReturned: an ejected address is back in service.
	AddressReturned ResilienceKind = "address_returned"
)

// ResilienceEvent is one resilience event of a source schema; see
// WithResilienceHook.
type ResilienceEvent struct {
	Kind   ResilienceKind // always set
	Schema string         // the source schema's name
	Path   env.Path       // the path of the route: legacy or sockets (a canary's candidate is sockets)
	Time   time.Time      // when the event happened
	// From and To are the breaker's states, for BreakerStateChanged:
	// "closed", "half_open", "open". Empty otherwise.
	From, To string
	// Address is the address ejected or returned, for AddressEjected and
	// AddressReturned (an IP address, without the port). Empty otherwise.
	Address string
	// For is how long an AddressEjected ejection lasts; zero otherwise.
	For time.Duration
}

// resilience is a route's circuit breaker, retry budget and hedge latency
// record, with the settings they were made from: a reload keeps each one
// whose settings are equal, so that an open breaker stays open and a
// budget keeps its window. Immutable once the route is built; the values
// it points to are safe for concurrent use.
type resilience struct {
	breaker         *middleware.Breaker // nil: no breaker
	breakerSettings env.BreakerSettings
	budget          *middleware.RetryBudget // nil: no budget
	budgetSettings  [2]float64              // ratio, min per second
	latencies       *middleware.Latencies   // nil: no quantile delay
	hedgeSettings   env.HedgeSettings
	limiter         *middleware.RateLimiter // the schema's, shared by its routes; nil: no limit (shaping.go)
}

// resilienceOf builds the resilience of route r (its name, path and role
// set) from settings, reusing prev's parts whose settings are equal.
func (inv *Transport) resilienceOf(r *route, settings env.Settings, prev *route) resilience {
	var old resilience
	if prev != nil && prev.path == r.path && prev.candidate == r.candidate {
		old = prev.res
	}
	var res resilience
	// A shadow candidate never serves a caller: it gets no breaker, so
	// that shadowing can never open one.
	if b := settings.CircuitBreaker; b.Enabled.On() && !(r.candidate && inv.shadow != nil) {
		res.breakerSettings = b
		if old.breaker != nil && equalBreaker(old.breakerSettings, b) {
			res.breaker = old.breaker
		} else {
			res.breaker = middleware.NewBreaker(middleware.BreakerConfig{
				Schema:           r.name,
				FailureRatio:     b.FailureRatio,
				MinRequests:      b.MinRequests,
				Window:           setting.Bound(b.Window),
				OpenFor:          setting.Bound(b.OpenFor),
				HalfOpenRequests: b.HalfOpenRequests,
				Statuses:         b.Statuses,
				OnStateChange:    inv.breakerChanged(r.name, r.path),
			})
		}
	}
	hedging := settings.Hedge.Enabled.On()
	if rs := settings.Retry; (rs.MaxAttempts > 1 || hedging) && rs.BudgetRatio != env.RatioOff {
		res.budgetSettings = [2]float64{rs.BudgetRatio, float64(rs.BudgetMinPerSecond)}
		if old.budget != nil && old.budgetSettings == res.budgetSettings {
			res.budget = old.budget
		} else {
			res.budget = middleware.NewRetryBudget(middleware.RetryBudgetConfig{
				Ratio:        rs.BudgetRatio,
				MinPerSecond: rs.BudgetMinPerSecond, // NoLimit (no floor) is negative: none
				OnExhausted:  inv.budgetExhausted(r.name, r.path, rs),
			})
		}
	}
	if hedging {
		res.hedgeSettings = settings.Hedge
		if settings.Hedge.Delay.Quantile > 0 {
			if old.latencies != nil && old.hedgeSettings == settings.Hedge {
				res.latencies = old.latencies
			} else {
				res.latencies = middleware.NewLatencies()
			}
		}
	}
	return res
}

func equalBreaker(a, b env.BreakerSettings) bool {
	return a.FailureRatio == b.FailureRatio && a.MinRequests == b.MinRequests && a.Window == b.Window &&
		a.OpenFor == b.OpenFor && a.HalfOpenRequests == b.HalfOpenRequests && slices.Equal(a.Statuses, b.Statuses) &&
		(a.Statuses == nil) == (b.Statuses == nil) // nil is the default list, empty is none
}

// resilient returns the breaker, retry and hedge middleware of a route,
// in the order of their stages (pipeline.go): Retry (outermost of the
// three), then Hedge, then the breaker, so that every attempt and every
// hedge passes the breaker.
func (inv *Transport) resilient(res resilience, settings env.Settings, name string, path env.Path) (retry, hedge, breaker middleware.Middleware) {
	log := inv.log.With("source_schema", name)
	r := settings.Retry
	if r.MaxAttempts > 1 {
		retry = middleware.Retry(middleware.RetryConfig{
			MaxAttempts: r.MaxAttempts,
			WaitMin:     setting.Bound(r.WaitMin),
			WaitMax:     setting.Bound(r.WaitMax),
			Statuses:    r.Statuses,
			Budget:      res.budget,
			Logger:      log,
		})
	}
	if h := settings.Hedge; h.Enabled.On() {
		hedge = middleware.Hedge(middleware.HedgeConfig{
			Delay:      h.Delay.After,
			Quantile:   h.Delay.Quantile,
			Latencies:  res.latencies,
			MaxExtra:   h.MaxExtra,
			Budget:     res.budget,
			CountFirst: r.MaxAttempts <= 1,
			OnSent: func(ctx context.Context) {
				inv.o.meters.RecordHedge(ctx, name, string(path), false)
				inv.resilienceEvent(ResilienceEvent{Kind: HedgeSent, Schema: name, Path: path})
			},
			OnWon: func(ctx context.Context) {
				inv.o.meters.RecordHedge(ctx, name, string(path), true)
				inv.resilienceEvent(ResilienceEvent{Kind: HedgeWon, Schema: name, Path: path})
			},
		})
	}
	if res.breaker != nil {
		breaker = res.breaker.Middleware()
	}
	return retry, hedge, breaker
}

// breakerChanged is a breaker's OnStateChange: a log line (Warn when it
// opens, Info otherwise), the telemetry, the hook. The log line and the
// metrics get the context of the request that caused the change (none
// when Breaker.State did).
func (inv *Transport) breakerChanged(name string, path env.Path) func(ctx context.Context, from, to middleware.BreakerState) {
	return func(ctx context.Context, from, to middleware.BreakerState) {
		level := slog.LevelInfo
		msg := "circuit breaker closed: source schema answers again"
		switch to {
		case middleware.BreakerOpen:
			level, msg = slog.LevelWarn, "circuit breaker open: calls to the source schema fail at once, unsent"
		case middleware.BreakerHalfOpen:
			msg = "circuit breaker half-open: trial calls go through"
		}
		inv.log.Log(ctx, level, msg, "source_schema", name, "path", string(path), "from", from.String(), "to", to.String())
		inv.o.meters.RecordBreakerState(ctx, name, string(path), to.String(), int64(to))
		inv.resilienceEvent(ResilienceEvent{Kind: BreakerStateChanged, Schema: name, Path: path, From: from.String(), To: to.String()})
	}
}

// budgetExhausted is a budget's OnExhausted: the telemetry and the hook
// for each refusal, a Warn line at most once a second; ctx is the refused
// request's.
func (inv *Transport) budgetExhausted(name string, path env.Path, rs env.RetrySettings) func(ctx context.Context, warn bool) {
	return func(ctx context.Context, warn bool) {
		if warn {
			inv.log.WarnContext(ctx, "retry budget exhausted: failures are returned without retry or hedge",
				"source_schema", name, "path", string(path),
				"budget_ratio", rs.BudgetRatio, "budget_min_per_second", max(rs.BudgetMinPerSecond, 0), "window", middleware.BudgetWindow)
		}
		inv.o.meters.RecordBudgetExhausted(ctx, name, string(path))
		inv.resilienceEvent(ResilienceEvent{Kind: BudgetExhausted, Schema: name, Path: path})
	}
}

// addressChanged is a pool's OnAddress: the telemetry and the hook (the
// pool logs the line itself). ctx is the context of the request whose
// failure ejected the address; a return has none (backend.Schema.OnAddress).
func (inv *Transport) addressChanged(name string, path env.Path) func(context.Context, backend.AddressEvent) {
	return func(ctx context.Context, ev backend.AddressEvent) {
		kind := AddressReturned
		if ev.Ejected {
			kind = AddressEjected
			inv.o.meters.RecordEjection(ctx, name, string(path))
		}
		inv.resilienceEvent(ResilienceEvent{Kind: kind, Schema: name, Path: path, Address: ev.Address.String(), For: ev.For})
	}
}

func (inv *Transport) resilienceEvent(ev ResilienceEvent) {
	ev.Time = time.Now()
	inv.recent.resilience(ev)
	if h := inv.o.resilienceHook; h != nil {
		h(ev)
	}
}
