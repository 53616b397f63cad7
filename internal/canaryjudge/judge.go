// Package canaryjudge judges a canary rollout of the sockets path, with
// the rules package canary describes, and reports in that package's types
// (Event, State).
//
// The root package asks a Schema, on every call of a canaried schema,
// whether the gateway request goes to sockets (Schema.Sockets), and reports
// each call's outcome (Schema.Record). Both are allocation-free and take no
// lock unless the share changes. Every change is published as a
// canary.Event.
//
// The Judge is configured once, from env.CanarySettings; it lives as long
// as the invoker that built it, and keeps each schema's state by name
// across reloads (Judge.Sync).
package canaryjudge

import (
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fusiongo/transport/canary"
)

// Side is one side of a canaried schema.
type Side uint8

const (
	// Legacy is the path that serves the rest of the requests.
	Legacy Side = iota
	// Sockets is the path under trial.
	Sockets
)

func (p Side) String() string {
	if p == Sockets {
		return "sockets"
	}
	return "legacy"
}

// Settings are the judge's parameters, with defaults applied (see
// env.Config.EffectiveCanary, whose fields they are).
type Settings struct {
	Rate               float64       // starting share, in (0, 1]
	MaxRate            float64       // the share growth stops at, in [Rate, 1]
	Step               float64       // growth per Interval; 0: none
	Interval           time.Duration // least time between two growths
	Window             int           // requests kept per schema and path
	MinRequests        int           // requests each side needs before judging
	MaxErrorRatioDelta float64       // how far sockets' error ratio may exceed legacy's
	Cooldown           time.Duration // time at share zero after a fallback
}

// Options are the judge's Go-only settings.
type Options struct {
	// Now is the clock. Nil: time.Now.
	Now func() time.Time
	// Publish receives every change of share, on the goroutine of the
	// request whose outcome caused it (or of Sync), after the change took
	// effect and outside any lock of the judge. It must not block. Nil:
	// changes are not published.
	Publish func(canary.Event)
}

// Judge holds the canary state of every canaried schema. It is safe for
// concurrent use.
type Judge struct {
	s       Settings
	now     func() time.Time
	publish func(canary.Event)

	mu      sync.Mutex         // guards schemas
	schemas map[string]*Schema // by source schema name
}

// New returns a judge with settings s.
func New(s Settings, o Options) *Judge {
	if s.MaxRate < s.Rate {
		s.MaxRate = s.Rate
	}
	s.Window = max(s.Window, 1)
	s.MinRequests = min(max(s.MinRequests, 1), s.Window)
	j := &Judge{s: s, now: o.Now, publish: o.Publish, schemas: map[string]*Schema{}}
	if j.now == nil {
		j.now = time.Now
	}
	return j
}

// Sync makes names the canaried schemas: each keeps its state if it had
// one, a new one starts at the starting rate (published with reason
// canary.Start), and the schemas not named are forgotten. It returns the
// state of each name.
func (j *Judge) Sync(names []string) map[string]*Schema {
	out := make(map[string]*Schema, len(names))
	var started []*Schema
	j.mu.Lock()
	for _, n := range names {
		s, ok := j.schemas[n]
		if !ok {
			s = newSchema(j, n)
			j.schemas[n] = s
			started = append(started, s)
		}
		out[n] = s
	}
	for n := range j.schemas {
		if _, ok := out[n]; !ok {
			delete(j.schemas, n)
		}
	}
	j.mu.Unlock()
	for _, s := range started {
		s.emit(canary.Event{Schema: s.name, Reason: canary.Start, To: j.s.Rate, At: j.now()})
	}
	return out
}

// Schema is the canary state of one source schema. Its share and windows
// are atomics: Sockets and Record take no lock unless a change is due.
type Schema struct {
	j    *Judge
	name string

	share         atomic.Uint64 // math.Float64bits of the share in force
	cooldownUntil atomic.Int64  // unix nanoseconds; 0: not cooling down
	lastChange    atomic.Int64  // unix nanoseconds of the last change of share
	fallbacks     atomic.Int64
	win           [2]atomic.Pointer[ring] // by Path; replaced whole on a reset

	mu         sync.Mutex    // serialises changes of share
	lastReason canary.Reason // guarded by mu
}

func newSchema(j *Judge, name string) *Schema {
	s := &Schema{j: j, name: name, lastReason: canary.Start}
	s.share.Store(math.Float64bits(j.s.Rate))
	s.lastChange.Store(j.now().UnixNano())
	for p := range s.win {
		s.win[p].Store(newRing(j.s.Window))
	}
	return s
}

// Name returns the source schema's name.
func (s *Schema) Name() string { return s.name }

// Share returns the share in force.
func (s *Schema) Share() float64 { return math.Float64frombits(s.share.Load()) }

// Sockets reports whether the gateway request with key goes to sockets:
// key, read as a number in [0, 1), is below the share. Calls with equal
// keys at an equal share take one path.
func (s *Schema) Sockets(key uint64) bool {
	return float64(key>>11)*(1.0/(1<<53)) < s.Share()
}

// Start returns the clock's time, for Record's latency.
func (s *Schema) Start() time.Time { return s.j.now() }

// Record counts the outcome of one call on path p that started at start
// (Start), then applies any change of share that is due: a fallback, the
// end of a cooldown, or a growth.
func (s *Schema) Record(p Side, failed bool, start time.Time) {
	now := s.j.now()
	s.win[p].Load().add(failed, now.Sub(start))
	s.judge(now)
}

// judge applies the change of share that is due at now, if any.
func (s *Schema) judge(now time.Time) {
	st := &s.j.s
	if cu := s.cooldownUntil.Load(); cu != 0 {
		if now.UnixNano() >= cu {
			s.change(now, canary.Restart)
		}
		return
	}
	l, k := s.win[Legacy].Load(), s.win[Sockets].Load()
	ln, lf := l.counts()
	sn, sf := k.counts()
	if ln < st.MinRequests || sn < st.MinRequests {
		return
	}
	if float64(sf)/float64(sn)-float64(lf)/float64(ln) > st.MaxErrorRatioDelta {
		s.change(now, canary.Fallback)
		return
	}
	if st.Step > 0 && s.Share() < st.MaxRate && now.UnixNano()-s.lastChange.Load() >= int64(st.Interval) {
		s.change(now, canary.Grow)
	}
}

// change applies reason at now, once: the condition is checked again under
// the lock, since concurrent calls may find the same change due.
func (s *Schema) change(now time.Time, reason canary.Reason) {
	st := &s.j.s
	s.mu.Lock()
	from := s.Share()
	ev := canary.Event{Schema: s.name, Reason: reason, From: from, At: now}
	switch reason {
	case canary.Restart:
		cu := s.cooldownUntil.Load()
		if cu == 0 || now.UnixNano() < cu {
			s.mu.Unlock()
			return
		}
		s.cooldownUntil.Store(0)
		ev.To = st.Rate
	case canary.Fallback:
		if s.cooldownUntil.Load() != 0 {
			s.mu.Unlock()
			return
		}
		ev.Legacy, ev.Sockets = s.win[Legacy].Load().snapshot(), s.win[Sockets].Load().snapshot()
		ev.CooldownUntil = now.Add(st.Cooldown)
		s.cooldownUntil.Store(ev.CooldownUntil.UnixNano())
		// The failures that caused the fallback must not cause the next
		// one: sockets starts over after the cooldown.
		s.win[Sockets].Store(newRing(st.Window))
		s.fallbacks.Add(1)
		ev.To = 0
	case canary.Grow:
		if s.cooldownUntil.Load() != 0 || from >= st.MaxRate || now.UnixNano()-s.lastChange.Load() < int64(st.Interval) {
			s.mu.Unlock()
			return
		}
		ev.To = min(from+st.Step, st.MaxRate)
	}
	s.share.Store(math.Float64bits(ev.To))
	s.lastChange.Store(now.UnixNano())
	s.lastReason = reason
	s.mu.Unlock()
	if reason != canary.Fallback {
		ev.Legacy, ev.Sockets = s.win[Legacy].Load().snapshot(), s.win[Sockets].Load().snapshot()
	}
	s.emit(ev)
}

func (s *Schema) emit(ev canary.Event) {
	if s.j.publish != nil {
		s.j.publish(ev)
	}
}

// ring is a window of the latest outcomes, count-based: slot i holds the
// outcome of the i-th call modulo its size. Each slot packs the outcome
// into one word, so that a call writes it with one atomic swap and keeps
// the failure count exact without a lock.
type ring struct {
	slots    []atomic.Uint64
	next     atomic.Uint64 // calls recorded
	failures atomic.Int64  // failed outcomes in the slots
}

const (
	slotUsed   = 1 << 63
	slotFailed = 1 << 62
	slotNanos  = slotFailed - 1 // latency in nanoseconds, capped
)

func newRing(n int) *ring { return &ring{slots: make([]atomic.Uint64, n)} }

func (r *ring) add(failed bool, latency time.Duration) {
	v := uint64(slotUsed) | min(uint64(max(latency, 0)), slotNanos)
	if failed {
		v |= slotFailed
		r.failures.Add(1)
	}
	i := r.next.Add(1) - 1
	if old := r.slots[i%uint64(len(r.slots))].Swap(v); old&slotFailed != 0 {
		r.failures.Add(-1)
	}
}

// counts returns the requests in the window and the failed ones.
func (r *ring) counts() (requests, failures int) {
	n := min(r.next.Load(), uint64(len(r.slots)))
	return int(n), int(min(max(r.failures.Load(), 0), int64(n)))
}

// snapshot reads the window, with latency quantiles; it allocates, and runs
// only when a share changes or the state is read.
func (r *ring) snapshot() canary.Counts {
	var lat []time.Duration
	failures := 0
	for i := range r.slots {
		v := r.slots[i].Load()
		if v&slotUsed == 0 {
			continue
		}
		if v&slotFailed != 0 {
			failures++
		}
		lat = append(lat, time.Duration(v&slotNanos))
	}
	c := canary.Counts{Requests: len(lat), Failures: failures}
	if len(lat) == 0 {
		return c
	}
	c.ErrorRatio = float64(failures) / float64(len(lat))
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[min(int(p*float64(len(lat))), len(lat)-1)] }
	c.P50, c.P90, c.P99 = q(0.50), q(0.90), q(0.99)
	return c
}

// State returns the state of every canaried schema. A cooldown that has
// ended is applied first, so that the state read is the one in force.
func (j *Judge) State() canary.State {
	j.mu.Lock()
	schemas := make([]*Schema, 0, len(j.schemas))
	for _, s := range j.schemas {
		schemas = append(schemas, s)
	}
	j.mu.Unlock()
	sort.Slice(schemas, func(a, b int) bool { return schemas[a].name < schemas[b].name })
	out := canary.State{Rate: j.s.Rate, MaxRate: j.s.MaxRate, Schemas: make(map[string]canary.SchemaState, len(schemas))}
	out.Settings.Step = j.s.Step
	out.Settings.Interval = j.s.Interval.String()
	out.Settings.Window = j.s.Window
	out.Settings.MinRequests = j.s.MinRequests
	out.Settings.MaxErrorRatioDelta = j.s.MaxErrorRatioDelta
	out.Settings.Cooldown = j.s.Cooldown.String()
	now := j.now()
	for _, s := range schemas {
		if cu := s.cooldownUntil.Load(); cu != 0 && now.UnixNano() >= cu {
			s.change(now, canary.Restart)
		}
		s.mu.Lock()
		ss := canary.SchemaState{
			Share:      s.Share(),
			Legacy:     s.win[Legacy].Load().snapshot(),
			Sockets:    s.win[Sockets].Load().snapshot(),
			LastChange: time.Unix(0, s.lastChange.Load()).UTC(),
			LastReason: s.lastReason,
			Fallbacks:  s.fallbacks.Load(),
		}
		if cu := s.cooldownUntil.Load(); cu != 0 {
			t := time.Unix(0, cu).UTC()
			ss.CooldownUntil = &t
		}
		s.mu.Unlock()
		out.Schemas[s.name] = ss
	}
	return out
}

// ServeHTTP serves the state as JSON (see State), to GET and HEAD.
func (j *Judge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	b, err := json.MarshalIndent(j.State(), "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(append(b, '\n'))
}
