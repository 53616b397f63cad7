package transport

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/textproto"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/net/http/httpguts"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/gateway"
)

// The runtime rollout: which path serves a source schema call, decided per
// gateway request by a feature flag (WithRollout), with the startup switch
// (switch.go) as its fallback and a kill switch over both. The flag is read
// through RolloutFlags, an interface of this package's own, so that package
// transport links no feature-flag SDK: package featureflag adapts an
// OpenFeature client to it.

// Defaults of RolloutOptions.
const (
	// DefaultRolloutFlag is the key of the rollout flag.
	DefaultRolloutFlag = "fusion-sockets-transport"
	// DefaultKillFlag is the key of the kill switch flag.
	DefaultKillFlag = "fusion-sockets-transport-kill"
	// DefaultRolloutTimeout bounds one evaluation of the rollout flag.
	DefaultRolloutTimeout = 20 * time.Millisecond
	// DefaultRolloutCacheTTL is how long an evaluation's answer serves
	// the gateway requests with the same evaluation context when the
	// provider announces no change.
	DefaultRolloutCacheTTL = time.Second
	// DefaultRolloutCacheSize bounds the evaluation contexts whose answer
	// is kept.
	DefaultRolloutCacheSize = 10000
)

// maxPendingEvaluations bounds the evaluations of the rollout flag under
// way at once (one per evaluation context): a provider that hangs holds at
// most this many goroutines, and the gateway requests beyond fall back
// (reason "busy").
const maxPendingEvaluations = 64

// RolloutFlags is a feature-flag client as the runtime rollout reads it.
// featureflag.OpenFeature makes one of an OpenFeature client; a test or a
// gateway with a flag system of its own may implement it. Its methods are
// called concurrently.
type RolloutFlags interface {
	// StringFlag evaluates the string flag key for in. ctx is the
	// gateway request's context (its values, its span), without its
	// cancellation: an answer that comes after the bound still serves
	// the gateway requests after it.
	StringFlag(ctx context.Context, key string, in FlagContext) FlagAnswer
	// BoolFlag evaluates the boolean flag key with no targeting key.
	BoolFlag(ctx context.Context, key string) FlagAnswer
	// OnChange calls changed, from any goroutine, whenever the flags may
	// have changed (the provider's configuration changed, it became
	// ready, stale or failed); stop unregisters it. A client that cannot
	// tell returns a stop that does nothing: the answers then serve for
	// RolloutOptions.CacheTTL.
	OnChange(changed func()) (stop func())
}

// FlagContext is the evaluation context of one gateway request's rollout
// decision.
type FlagContext struct {
	// TargetingKey is the value of the gateway request's
	// RolloutOptions.TargetingHeader; "" when it has none.
	TargetingKey string
	// SourceSchema is the source schema of the gateway request's first
	// call.
	SourceSchema string
	// OperationName is the operationName of that call's GraphQL request
	// (Post's body; Do's URL query); "" when it names none.
	OperationName string
}

// FlagAnswer is a flag evaluation's result.
type FlagAnswer struct {
	Value   string // the string flag's value
	On      bool   // the boolean flag's value
	Variant string // the variant's name, as the provider gives it; may be ""
	// Reason is the reason the provider gave, as the OpenFeature SDK
	// spells it: STATIC, TARGETING_MATCH, SPLIT, DEFAULT, CACHED,
	// DISABLED, ERROR, ...
	Reason string
	// Err is not nil when the provider is not ready, failed, or has no
	// such flag: the value is not used.
	Err error
}

// RolloutOptions configure the runtime rollout. The zero value takes
// every default.
type RolloutOptions struct {
	// Flag is the key of the string flag whose variants are values of
	// the startup switch's grammar (env.ParseSwitch): "0", "1", a schema
	// list, "canary:10%". Default: DefaultRolloutFlag.
	Flag string
	// KillFlag is the key of the boolean flag that, when true, sends
	// every new source schema call to the legacy path. Default:
	// DefaultKillFlag.
	KillFlag string
	// TargetingHeader names the gateway request header whose value is
	// the targeting key (a user or tenant id), so that one user's
	// gateway requests take one path. "": none; a canary variant then
	// picks per gateway request.
	TargetingHeader string
	// Timeout bounds one evaluation: a gateway request whose evaluation
	// takes longer falls back to the startup switch (the answer, when it
	// comes, serves the requests after it). Default:
	// DefaultRolloutTimeout.
	Timeout time.Duration
	// CacheTTL is how long an answer serves the gateway requests with an
	// equal evaluation context, unless the provider announces a change
	// first (RolloutFlags.OnChange), which drops every answer at once.
	// Negative: no answer is kept, every gateway request is evaluated.
	// Default: DefaultRolloutCacheTTL.
	CacheTTL time.Duration
	// CacheSize bounds the evaluation contexts whose answers are kept;
	// when it is reached they are all dropped. Default:
	// DefaultRolloutCacheSize.
	CacheSize int
}

// WithRollout makes the path of each gateway request's source schema calls
// a feature flag (see docs/rollout.md, "The runtime ladder"): the first
// call of a gateway request (the context of WithGatewayRequest or
// GatewayRequestHandler) evaluates o.Flag once, and every call made with
// that context takes the path of that evaluation. A call without a gateway
// request is its own gateway request.
//
// Both paths are built for every source schema (at New and by each
// Reload), so that any variant, and the kill switch, can be honoured at
// once. When the flag cannot decide (the provider is not ready or fails,
// the evaluation is slower than o.Timeout, the variant is not of the
// switch's grammar, names a source schema that is not configured, or asks
// for shadow, which only the startup switch can start), the startup switch
// decides, as it would without the option: logged once per change, counted
// (fusion.transport.rollout.fallbacks, the status page). When o.KillFlag is
// true every new call goes to legacy; calls in flight finish where they
// started.
func WithRollout(flags RolloutFlags, o RolloutOptions) Option {
	return func(op *options) {
		op.rolloutFlags, op.rollout, op.rolloutSet = flags, o, true
	}
}

// checkRollout refuses WithRollout's settings that cannot be honoured,
// naming them, rather than running without the rollout.
func checkRollout(o *options) error {
	switch {
	case !o.rolloutSet:
		return nil
	case o.rolloutFlags == nil:
		return errors.New("WithRollout: the RolloutFlags are nil")
	case o.rollout.TargetingHeader != "" && !httpguts.ValidHeaderFieldName(o.rollout.TargetingHeader):
		return fmt.Errorf("WithRollout: RolloutOptions.TargetingHeader %q is not a header name", o.rollout.TargetingHeader)
	}
	return nil
}

// The sources of a decision, as the status page counts them.
const (
	sourceStartup = iota // the startup switch
	sourceFlag           // the rollout flag
	sourceKill           // the kill switch
	sourceCount
)

var sourceNames = [sourceCount]string{"startup", "flag", "kill"}

// The reasons the startup switch decides instead of the flag.
const (
	fallbackProvider = "provider_error"  // the provider is not ready, failed, or has no such flag
	fallbackTimeout  = "timeout"         // the evaluation took longer than the bound
	fallbackBusy     = "busy"            // maxPendingEvaluations evaluations are under way
	fallbackInvalid  = "invalid_variant" // not the switch's grammar, or a schema not configured
	fallbackNotBuilt = "not_built"       // asks for what was not built (shadow)
	fallbackNoValue  = "no_value"        // the flag gave "": disabled, or its default
)

// decision is how one gateway request's calls choose their path. It is
// immutable; many gateway requests share one (the cache, the startup
// decision).
type decision struct {
	flag bool // the flag decided; false: the startup switch decides
	// path is PathLegacy or PathSockets for every schema, or PathMixed:
	// the schemas in names on sockets, the rest on legacy. Flag only.
	path  env.Path
	names map[string]bool
	// rate is a canary variant's share of targeting keys on sockets:
	// such a decision is a template, and each gateway request takes
	// canaryOn or canaryOff (pick).
	rate                float64
	canaryOn, canaryOff *decision

	// What the status page and the log say of it.
	value, variant, reason string // the flag's answer; reason is the provider's
	fallback, cause        string // why the startup switch decides, and the detail
}

// pathFor returns the path of source schema name under a flag decision.
func (d *decision) pathFor(name string) env.Path {
	if d.path == env.PathMixed {
		if d.names[name] {
			return env.PathSockets
		}
		return env.PathLegacy
	}
	return d.path
}

// pick returns the decision of one gateway request with targeting key tk:
// d itself, or a canary's side.
func (d *decision) pick(flagKey, tk string) *decision {
	if d.canaryOn == nil {
		return d
	}
	var u float64
	if tk == "" {
		u = rand.Float64()
	} else {
		u = unitHash(flagKey, tk)
	}
	if u < d.rate {
		return d.canaryOn
	}
	return d.canaryOff
}

// unitHash maps a flag key and a targeting key to [0, 1): FNV-1a and a
// finalizer, fixed,
// so that a user takes the same side on every gateway replica and after a
// restart, and a share that grows only adds users.
func unitHash(flagKey, tk string) float64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(flagKey); i++ {
		h = (h ^ uint64(flagKey[i])) * prime
	}
	h = (h ^ 0) * prime
	for i := 0; i < len(tk); i++ {
		h = (h ^ uint64(tk[i])) * prime
	}
	// FNV's last bytes barely reach its high bits ("user-1" and
	// "user-2" would land side by side): murmur3's finalizer mixes them.
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return float64(h>>11) / (1 << 53)
}

// evalKey is one evaluation context, the key of the cache.
type evalKey struct {
	tk, schema, op string
}

// cachedDecision is a kept answer.
type cachedDecision struct {
	d       *decision
	expires int64 // unix nanoseconds
}

// pendingEval is an evaluation under way, that the gateway requests with
// its evaluation context wait for, each within its own bound.
type pendingEval struct {
	done chan struct{} // closed when d is set
	d    *decision
}

// rollout is a Transport's runtime rollout. Its settings are immutable
// after New; the rest is guarded as each field says.
type rollout struct {
	inv    *Transport
	flags  RolloutFlags
	o      RolloutOptions // defaults applied
	header string         // o.TargetingHeader, canonical
	stop   func()         // unregisters the change callback

	mu      sync.RWMutex
	entries map[evalKey]cachedDecision // guarded by mu
	pending map[evalKey]*pendingEval   // guarded by mu
	gen     uint64                     // guarded by mu: bumped by every change, so that an answer evaluated before it is not kept
	schemas map[string]bool            // guarded by mu: the source schemas of the state in force, for checking variants

	killMu      sync.Mutex   // held by the evaluation of the kill switch under way
	killed      atomic.Bool  // the kill switch's last answer
	killChecked atomic.Int64 // unix nanoseconds of its last evaluation

	fallbacks [len(fallbackReasons)]atomic.Int64 // gateway requests that fell back, by fallbackReasons' index

	logMu  sync.Mutex
	logged map[string]bool // guarded by logMu: the fallbacks logged since the last change
	inFlag bool            // guarded by logMu: the last decision logged came from the flag
}

var fallbackReasons = [...]string{fallbackProvider, fallbackTimeout, fallbackBusy, fallbackInvalid, fallbackNotBuilt, fallbackNoValue}

// newRollout makes inv's rollout, nil without WithRollout.
func newRollout(inv *Transport) *rollout {
	if inv.o.rolloutFlags == nil {
		return nil
	}
	o := inv.o.rollout
	if o.Flag == "" {
		o.Flag = DefaultRolloutFlag
	}
	if o.KillFlag == "" {
		o.KillFlag = DefaultKillFlag
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultRolloutTimeout
	}
	if o.CacheTTL == 0 {
		o.CacheTTL = DefaultRolloutCacheTTL
	}
	if o.CacheSize <= 0 {
		o.CacheSize = DefaultRolloutCacheSize
	}
	ro := &rollout{inv: inv, flags: inv.o.rolloutFlags, o: o, header: textproto.CanonicalMIMEHeaderKey(o.TargetingHeader),
		entries: map[evalKey]cachedDecision{}, pending: map[evalKey]*pendingEval{}, logged: map[string]bool{}}
	return ro
}

// start reads the kill switch once and listens for changes; called by New
// once the state is in force.
func (ro *rollout) start(st *state) {
	if ro == nil {
		return
	}
	ro.setSchemas(st)
	ro.refreshKill()
	ro.stop = ro.flags.OnChange(ro.changed)
	ro.inv.log.Info("rollout: a flag decides each gateway request's path", ro.logAttrs()...)
}

// close stops listening for changes.
func (ro *rollout) close() {
	if ro != nil && ro.stop != nil {
		ro.stop()
	}
}

// setSchemas takes the source schemas of st, the state now in force, and
// drops every answer: a variant is checked against the schemas, and a
// reload may have added or removed one.
func (ro *rollout) setSchemas(st *state) {
	if ro == nil {
		return
	}
	names := make(map[string]bool, len(st.schemas))
	for n := range st.schemas {
		names[n] = true
	}
	ro.mu.Lock()
	ro.schemas = names
	ro.gen++
	clear(ro.entries)
	ro.mu.Unlock()
}

// changed is the flags' change callback: every answer is dropped, the kill
// switch read again, and the next fallback logged again.
func (ro *rollout) changed() {
	ro.mu.Lock()
	ro.gen++
	clear(ro.entries)
	ro.mu.Unlock()
	ro.logMu.Lock()
	clear(ro.logged)
	ro.logMu.Unlock()
	ro.refreshKill()
}

// refreshKill evaluates the kill switch, after the evaluation under way if
// any: a change is always read by an evaluation that began after it.
func (ro *rollout) refreshKill() {
	ro.killMu.Lock()
	defer ro.killMu.Unlock()
	ro.readKill()
}

// readKill evaluates the kill switch; killMu is held. An answer with an
// error keeps the state as it was: a provider's failure neither pulls nor
// lifts the switch.
func (ro *rollout) readKill() {
	a := ro.askBool(ro.o.KillFlag)
	ro.killChecked.Store(time.Now().UnixNano())
	if a.Err != nil {
		return
	}
	if was := ro.killed.Swap(a.On); was != a.On {
		if a.On {
			ro.inv.log.Warn("rollout: kill switch pulled, every new source schema call goes to the legacy path", "flag", ro.o.KillFlag, "variant", a.Variant, "reason", a.Reason)
		} else {
			ro.inv.log.Info("rollout: kill switch released", "flag", ro.o.KillFlag, "variant", a.Variant, "reason", a.Reason)
		}
		ro.inv.recent.add(statusEvent{At: time.Now().UTC(), Kind: "rollout_kill", To: fmt.Sprint(a.On)})
	}
}

// killedNow reports the kill switch, and reads it again in the background
// when its answer is older than the cache's TTL (or a second, without a
// cache), for providers that announce no change.
func (ro *rollout) killedNow() bool {
	ttl := ro.o.CacheTTL
	if ttl < 0 {
		ttl = DefaultRolloutCacheTTL
	}
	if time.Now().UnixNano()-ro.killChecked.Load() > int64(ttl) && ro.killMu.TryLock() {
		go func() {
			defer ro.killMu.Unlock()
			ro.readKill()
		}()
	}
	return ro.killed.Load()
}

// askBool evaluates a boolean flag; a panic of the client is its error.
func (ro *rollout) askBool(key string) (a FlagAnswer) {
	defer func() {
		if p := recover(); p != nil {
			a = FlagAnswer{Reason: "ERROR", Err: fmt.Errorf("flag %q: the flag client panicked: %v", key, p)}
		}
	}()
	return ro.flags.BoolFlag(context.Background(), key)
}

// askString evaluates the rollout flag; a panic of the client is its error.
func (ro *rollout) askString(ctx context.Context, in FlagContext) (a FlagAnswer) {
	defer func() {
		if p := recover(); p != nil {
			a = FlagAnswer{Reason: "ERROR", Err: fmt.Errorf("the flag client panicked: %v", p)}
		}
	}()
	return ro.flags.StringFlag(ctx, ro.o.Flag, in)
}

// decide returns the decision of the gateway request of ctx: the one its
// first call made, or a new one for the first call, which name is, with
// the operation name of body (Post) or rawQuery (Do). A decision made
// here is kept in the gateway request's memo and counted.
func (ro *rollout) decide(ctx context.Context, name string, body []byte, rawQuery string) *decision {
	memo := gateway.Memo(ctx)
	if memo != nil {
		if d, ok := memo.Load().(*decision); ok {
			return d
		}
	}
	var tk string
	if gw := gateway.Request(ctx); gw != nil && ro.header != "" {
		if v := gw.Header[ro.header]; len(v) > 0 {
			tk = v[0]
		}
	}
	d := ro.evaluate(ctx, evalKey{tk: tk, schema: name, op: operationNameOf(body, rawQuery)}).pick(ro.o.Flag, tk)
	if memo != nil && !memo.CompareAndSwap(nil, d) {
		return memo.Load().(*decision) // a concurrent first call decided
	}
	if !d.flag {
		for i, r := range fallbackReasons {
			if r == d.fallback {
				ro.fallbacks[i].Add(1)
			}
		}
		ro.inv.o.meters.RecordRolloutFallback(ctx, d.fallback)
	}
	return d
}

// evaluate returns the decision for k: a kept answer, or the flag's, or
// the startup switch's when the flag cannot give one within the bound. k
// may hold a string that aliases the caller's body: it is copied before it
// is kept.
func (ro *rollout) evaluate(ctx context.Context, k evalKey) *decision {
	now := time.Now().UnixNano()
	ro.mu.RLock()
	c, ok := ro.entries[k]
	ro.mu.RUnlock()
	if ok && now < c.expires {
		return c.d
	}
	k.op = strings.Clone(k.op)
	ro.mu.Lock()
	p := ro.pending[k]
	if p == nil {
		if len(ro.pending) >= maxPendingEvaluations {
			ro.mu.Unlock()
			return ro.fallback(fallbackBusy, fmt.Sprintf("%d evaluations of flag %q are under way", maxPendingEvaluations, ro.o.Flag))
		}
		p = &pendingEval{done: make(chan struct{})}
		ro.pending[k] = p
		go ro.run(context.WithoutCancel(ctx), k, p, ro.gen)
	}
	ro.mu.Unlock()
	t := time.NewTimer(ro.o.Timeout)
	defer t.Stop()
	select {
	case <-p.done:
		return p.d
	case <-t.C:
		return ro.fallback(fallbackTimeout, fmt.Sprintf("flag %q took longer than %s", ro.o.Flag, ro.o.Timeout))
	}
}

// run evaluates the flag for k, keeps the answer unless the flags changed
// since gen, and hands it to those waiting on p.
func (ro *rollout) run(ctx context.Context, k evalKey, p *pendingEval, gen uint64) {
	a := ro.askString(ctx, FlagContext{TargetingKey: k.tk, SourceSchema: k.schema, OperationName: k.op})
	ro.mu.RLock()
	schemas := ro.schemas
	ro.mu.RUnlock()
	d := ro.interpret(a, schemas)
	ro.mu.Lock()
	delete(ro.pending, k)
	if ro.gen == gen && ro.o.CacheTTL > 0 {
		if len(ro.entries) >= ro.o.CacheSize {
			clear(ro.entries)
		}
		ro.entries[k] = cachedDecision{d: d, expires: time.Now().Add(ro.o.CacheTTL).UnixNano()}
	}
	ro.mu.Unlock()
	p.d = d
	close(p.done)
}

// interpret checks an answer of the rollout flag as the startup switch is
// checked (env.ParseSwitch, and the source schemas it names against those
// configured), and returns its decision, or the startup switch's with the
// reason it could not be used.
func (ro *rollout) interpret(a FlagAnswer, schemas map[string]bool) *decision {
	if a.Err != nil {
		return ro.fallbackOf(a, fallbackProvider, a.Err.Error())
	}
	if strings.TrimSpace(a.Value) == "" {
		// The SDK answers a disabled flag, or one whose rules give
		// nothing, with the default value, "": not the switch's "legacy".
		return ro.fallbackOf(a, fallbackNoValue, fmt.Sprintf("flag %q gave no value (reason %s): disabled, or its default", ro.o.Flag, a.Reason))
	}
	sw, err := env.ParseSwitch(a.Value)
	if err != nil {
		return ro.fallbackOf(a, fallbackInvalid, fmt.Sprintf("flag %q: %v", ro.o.Flag, err))
	}
	if sw.ShadowRate > 0 {
		return ro.fallbackOf(a, fallbackNotBuilt, fmt.Sprintf("flag %q: variant %q asks for shadow comparison, which only the startup switch (%s) starts", ro.o.Flag, a.Value, env.SwitchVar))
	}
	for _, n := range append(sw.Schemas, sw.CanarySchemas...) {
		if !schemas[n] {
			return ro.fallbackOf(a, fallbackInvalid, fmt.Sprintf("flag %q: variant %q names source schema %q, which is not configured", ro.o.Flag, a.Value, n))
		}
	}
	d := &decision{flag: true, path: sw.Path, names: setOf(sw.Schemas), value: a.Value, variant: a.Variant, reason: a.Reason}
	if sw.CanaryRate > 0 {
		d.rate = sw.CanaryRate
		on := *d
		if sw.CanarySchemas == nil {
			on.path = env.PathSockets
		} else {
			on.path, on.names = env.PathMixed, setOf(sw.CanarySchemas)
		}
		off := *d
		off.path = env.PathLegacy
		d.canaryOn, d.canaryOff = &on, &off
	}
	ro.note(d)
	return d
}

func setOf(names []string) map[string]bool {
	if len(names) == 0 {
		return nil
	}
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// fallback returns a decision of the startup switch for reason, with no
// answer of the flag.
func (ro *rollout) fallback(reason, cause string) *decision {
	return ro.fallbackOf(FlagAnswer{}, reason, cause)
}

func (ro *rollout) fallbackOf(a FlagAnswer, reason, cause string) *decision {
	d := &decision{value: a.Value, variant: a.Variant, reason: a.Reason, fallback: reason, cause: cause}
	ro.note(d)
	return d
}

// note logs d if it is a change: each fallback (by reason and cause) once
// until the flags change, and the first decision of the flag after a
// fallback was logged.
func (ro *rollout) note(d *decision) {
	ro.logMu.Lock()
	defer ro.logMu.Unlock()
	if d.flag {
		if !ro.inFlag {
			ro.inFlag = true
			ro.inv.log.Info("rollout: the flag decides the path", "flag", ro.o.Flag, "value", d.value, "variant", d.variant, "reason", d.reason)
			ro.inv.recent.add(statusEvent{At: time.Now().UTC(), Kind: "rollout_flag", To: d.value})
		}
		return
	}
	key := d.fallback + "\x00" + d.cause
	if ro.logged[key] {
		return // users whose variants differ would otherwise log it at each turn
	}
	ro.inFlag = false
	ro.logged[key] = true
	ro.inv.log.Warn("rollout: the flag cannot decide, the startup switch does", "flag", ro.o.Flag, "fallback", d.fallback, "cause", d.cause, "startup_switch", ro.inv.startupSwitch())
	ro.inv.recent.add(statusEvent{At: time.Now().UTC(), Kind: "rollout_fallback", To: d.fallback})
}

// operationNameOf is the operation name of a call: the top-level
// operationName member of a Post's body, else the operationName parameter
// of a Do's URL query; "" when neither names one or it is escaped. The
// string may alias body: it is valid while body is.
func operationNameOf(body []byte, rawQuery string) string {
	if n := jsonOperationName(body); n != nil {
		return unsafe.String(unsafe.SliceData(n), len(n))
	}
	for rest := rawQuery; rest != ""; {
		var p string
		p, rest, _ = strings.Cut(rest, "&")
		if v, ok := strings.CutPrefix(p, "operationName="); ok && !strings.ContainsAny(v, "%+") {
			return v
		}
	}
	return ""
}

// jsonOperationName returns the bytes of the string value of body's
// top-level member "operationName", when body is a JSON object that has
// one without escapes before any malformed part; nil otherwise. It reads
// body once, up to that member, and checks nothing past it.
func jsonOperationName(b []byte) []byte {
	i := jsonSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil
	}
	for i++; ; i++ { // past '{' or ','
		i = jsonSpace(b, i)
		if i >= len(b) || b[i] != '"' {
			return nil
		}
		end := jsonStringEnd(b, i)
		if end < 0 {
			return nil
		}
		key := b[i+1 : end]
		i = jsonSpace(b, end+1)
		if i >= len(b) || b[i] != ':' {
			return nil
		}
		i = jsonSpace(b, i+1)
		if i >= len(b) {
			return nil
		}
		if string(key) == "operationName" {
			if b[i] != '"' {
				return nil
			}
			end = jsonStringEnd(b, i)
			if end < 0 || strings.IndexByte(unsafe.String(unsafe.SliceData(b[i+1:end]), end-i-1), '\\') >= 0 {
				return nil
			}
			return b[i+1 : end]
		}
		if i = jsonValueEnd(b, i); i < 0 {
			return nil
		}
		if i = jsonSpace(b, i); i >= len(b) || b[i] != ',' {
			return nil
		}
	}
}

func jsonSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// jsonStringEnd returns the index of the quote that closes the string
// opening at b[i]; -1 if it is not closed.
func jsonStringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// jsonValueEnd returns the index just past the value starting at b[i]; -1
// if it does not end.
func jsonValueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		if e := jsonStringEnd(b, i); e >= 0 {
			return e + 1
		}
		return -1
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				e := jsonStringEnd(b, i)
				if e < 0 {
					return -1
				}
				i = e
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
	}
	return i
}

// errNoRoute is the cause of a call whose decision names a path that the
// schema has no route on: a bug, since WithRollout builds both.
var errNoRoute = errors.New("no route on the path the rollout chose")

// rolloutRoute returns the route that the runtime rollout gives a call of
// source schema name: on legacy when the kill switch is pulled, on the
// flag's path when the flag decided the gateway request; nil when the
// startup switch decides (the caller goes on as without the option, and
// counts the path it takes with countStartup). body and rawQuery give the
// operation name, read only by a gateway request's first call.
func (inv *Transport) rolloutRoute(ctx context.Context, name string, body []byte, rawQuery string) (*route, *entry, error) {
	ro := inv.rollout
	e, err := inv.entryOf(name)
	if err != nil {
		return nil, nil, err
	}
	path, source := env.PathLegacy, sourceKill
	if !ro.killedNow() {
		d := ro.decide(ctx, name, body, rawQuery)
		e.share.decided(d)
		if !d.flag {
			return nil, e, nil
		}
		path, source = d.pathFor(name), sourceFlag
	}
	r := e.byPath[pathIndex(path)]
	if r == nil {
		return nil, nil, fmt.Errorf("source schema %q: %s: %w", name, path, errNoRoute)
	}
	e.share.count(path, source)
	return r, e, nil
}

// countStartup counts a call of e that the startup switch sent on path.
func (inv *Transport) countStartup(e *entry, path env.Path) {
	if inv.rollout != nil && e != nil {
		e.share.count(path, sourceStartup)
	}
}

// startupSwitch writes the startup switch in its grammar, for the log and
// the status page.
func (inv *Transport) startupSwitch() string {
	switch {
	case inv.path == env.PathMixed:
		return "mixed"
	case inv.canary != nil:
		return "canary"
	case inv.shadow != nil:
		return "shadow"
	}
	return string(inv.path)
}

// pathIndex is the index of path p in entry.byPath.
func pathIndex(p env.Path) int {
	if p == env.PathSockets {
		return 1
	}
	return 0
}

// shareSeconds is the window of the status page's shares.
const shareSeconds = 60

// shareWindow counts a source schema's calls per path and decision source
// over the last minute, in one-second slots, and keeps the last decision.
// A reload keeps it with the schema. Safe for concurrent use: the counts
// are atomic; a slot is zeroed by the first call of its new second, and a
// call counted in the same instant may be lost, which a share over a
// minute does not show.
type shareWindow struct {
	slots [shareSeconds]shareSlot
	last  atomic.Pointer[decision] // the decision of the latest call that a decision (not the kill switch) served
}

type shareSlot struct {
	sec atomic.Int64                 // the unix second the counts are of
	n   [2][sourceCount]atomic.Int64 // by pathIndex, source
}

// decided keeps d as the last decision, writing only when it changes.
func (w *shareWindow) decided(d *decision) {
	if w.last.Load() != d {
		w.last.Store(d)
	}
}

// count counts one call on path from source, now.
func (w *shareWindow) count(path env.Path, source int) {
	now := time.Now().Unix()
	s := &w.slots[now%shareSeconds]
	if old := s.sec.Load(); old != now && s.sec.CompareAndSwap(old, now) {
		for p := range s.n {
			for i := range s.n[p] {
				s.n[p][i].Store(0)
			}
		}
	}
	s.n[pathIndex(path)][source].Add(1)
}

// sum returns the counts of the last minute, by pathIndex and source.
func (w *shareWindow) sum() (n [2][sourceCount]int64) {
	now := time.Now().Unix()
	for i := range w.slots {
		s := &w.slots[i]
		if sec := s.sec.Load(); sec > now-shareSeconds && sec <= now {
			for p := range s.n {
				for src := range s.n[p] {
					n[p][src] += s.n[p][src].Load()
				}
			}
		}
	}
	return n
}

// rolloutStatus is the runtime rollout on the status page.
type rolloutStatus struct {
	Flag            string           `json:"flag"`
	KillFlag        string           `json:"kill_flag"`
	Killed          bool             `json:"killed"`
	TargetingHeader string           `json:"targeting_header,omitempty"` // the header's name, never its values
	StartupSwitch   string           `json:"startup_switch"`
	Fallbacks       map[string]int64 `json:"fallbacks"` // gateway requests that fell back since start, by reason
	Cached          int              `json:"cached"`    // evaluation contexts whose answer is kept
}

// rolloutSchemaStatus is a source schema's share of calls on each path in
// the last minute, and where its last decision came from.
type rolloutSchemaStatus struct {
	Legacy       int64            `json:"legacy"`        // calls on legacy in the last minute
	Sockets      int64            `json:"sockets"`       // calls on sockets in the last minute
	SocketsShare float64          `json:"sockets_share"` // sockets / (legacy + sockets); 0 without calls
	BySource     map[string]int64 `json:"by_source"`     // the same calls by what decided them: startup, flag, kill
	Decision     *decisionStatus  `json:"decision,omitempty"`
}

// decisionStatus is a decision as the status page shows it.
type decisionStatus struct {
	Source   string `json:"source"`             // flag or startup
	Value    string `json:"value,omitempty"`    // the flag's value
	Variant  string `json:"variant,omitempty"`  // the flag's variant
	Reason   string `json:"reason,omitempty"`   // the reason the provider gave
	Fallback string `json:"fallback,omitempty"` // why the startup switch decided
	Cause    string `json:"cause,omitempty"`
}

// status returns the rollout's part of the status page.
func (ro *rollout) status() *rolloutStatus {
	if ro == nil {
		return nil
	}
	s := &rolloutStatus{Flag: ro.o.Flag, KillFlag: ro.o.KillFlag, Killed: ro.killed.Load(), TargetingHeader: ro.header,
		StartupSwitch: ro.inv.startupSwitch(), Fallbacks: map[string]int64{}}
	for i, r := range fallbackReasons {
		s.Fallbacks[r] = ro.fallbacks[i].Load()
	}
	ro.mu.RLock()
	s.Cached = len(ro.entries)
	ro.mu.RUnlock()
	return s
}

// schemaStatus returns e's part of the status page.
func (w *shareWindow) status() *rolloutSchemaStatus {
	if w == nil {
		return nil
	}
	n := w.sum()
	s := &rolloutSchemaStatus{BySource: map[string]int64{}}
	for src, name := range sourceNames {
		s.Legacy += n[0][src]
		s.Sockets += n[1][src]
		s.BySource[name] = n[0][src] + n[1][src]
	}
	if total := s.Legacy + s.Sockets; total > 0 {
		s.SocketsShare = math.Round(float64(s.Sockets)/float64(total)*1e4) / 1e4
	}
	if d := w.last.Load(); d != nil {
		ds := &decisionStatus{Source: sourceNames[sourceStartup], Value: d.value, Variant: d.variant, Reason: d.reason, Fallback: d.fallback, Cause: d.cause}
		if d.flag {
			ds.Source = sourceNames[sourceFlag]
		}
		s.Decision = ds
	}
	return s
}

// logAttrs are the rollout's settings for New's log line.
func (ro *rollout) logAttrs() []any {
	return []any{"flag", ro.o.Flag, "kill_flag", ro.o.KillFlag, "targeting_header", ro.header, "timeout", ro.o.Timeout,
		"cache_ttl", ro.o.CacheTTL, "startup_switch", ro.inv.startupSwitch()}
}
