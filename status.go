package transport

import (
	"encoding/json"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fusiongo/transport/canary"
	"github.com/fusiongo/transport/internal/redact"
	"github.com/fusiongo/transport/internal/respcache"
	"github.com/fusiongo/transport/middleware"
)

// StatusHandler serves the state of inv for people and for machines, on one
// URL: per source schema its path, the engine, the canary share with its
// windows and recent changes, each route's circuit breaker, pool
// connections and addresses (in-flight requests, ejections), its response
// cache and its rate limit (the store, shared or fallen back, the counts),
// under WithRollout the share of calls on each path in the last minute and
// where the decision came from (the startup switch, the flag with its
// variant and the provider's reason, or the kill switch), and the latest
// canary, resilience and rollout events. A browser gets an HTML page that
// refreshes itself every few seconds; a request with "Accept:
// application/json" (and not text/html), or with ?format=json, gets the
// same state as JSON. ?format=html forces the page.
//
// The state holds names, counts, shares and states only: never a header
// value, the credentials of a URL (URLs are shown as scheme, host and
// path), or a body. It still tells who calls what and how hard: mount it
// behind the gateway's own authentication, on an admin listener (see
// docs/rollout.md, "The status page"). Unlike CanaryHandler it answers
// without a canary too.
func (inv *Transport) StatusHandler() http.Handler {
	return http.HandlerFunc(inv.serveStatus)
}

// status is the document StatusHandler serves.
type status struct {
	Path   string    `json:"path"` // the startup switch's path: legacy, sockets, mixed
	Mode   string    `json:"mode"` // plain, shadow or canary
	At     time.Time `json:"at"`
	Closed bool      `json:"closed,omitempty"`
	// Rollout is the runtime rollout (WithRollout); nil without it.
	Rollout *rolloutStatus `json:"rollout,omitempty"`
	Schemas []schemaStatus `json:"schemas"`
	Events  []statusEvent  `json:"events"`
}

// schemaStatus is one source schema.
type schemaStatus struct {
	Name   string        `json:"name"`
	URL    string        `json:"url"` // scheme://host/path: no userinfo, query or fragment
	Routes []routeStatus `json:"routes"`
	// Canary is the schema's canary state; nil outside a canary.
	Canary *canaryStatus `json:"canary,omitempty"`
	// Cache is the schema's response cache; nil when it is off.
	Cache *cacheStatus `json:"cache,omitempty"`
	// PersistedQueries is the schema's automatic persisted queries; nil
	// when persisted_queries.mode is off.
	PersistedQueries *persistedStatus `json:"persisted_queries,omitempty"`
	// Rollout is the schema's share of calls on each path in the last
	// minute and its last decision, under WithRollout; nil without it.
	Rollout *rolloutSchemaStatus `json:"rollout,omitempty"`
	// RateLimit is the schema's rate limit; nil when it is off.
	RateLimit *rateLimitStatus `json:"rate_limit,omitempty"`
}

// persistedStatus is a schema's automatic persisted queries since the
// configuration in force was loaded: on, or off and why, and the counts.
type persistedStatus struct {
	GET bool   `json:"get"`
	On  bool   `json:"on"`
	Off string `json:"off,omitempty"` // why they went off: not_supported, no_apq
	middleware.PersistedQueryCounts
}

// rateLimitStatus is a schema's rate limit: where it is kept, whether
// the fleet's limit answers now, and its counts since it was built (a
// reload that keeps it keeps them).
type rateLimitStatus struct {
	Store             string  `json:"store"` // local or redis
	RequestsPerSecond float64 `json:"requests_per_second"`
	Burst             int     `json:"burst"`
	// State is "local" (the local store: this replica's bucket),
	// "shared" (the redis store answers) or "fallen_back" (its last check
	// failed: the calls are decided by OnStoreError until one succeeds).
	State        string     `json:"state"`
	OnStoreError string     `json:"on_store_error,omitempty"` // the redis store's
	Since        *time.Time `json:"since,omitempty"`          // when State last changed; nil: never
	Limited      int64      `json:"limited"`                  // calls refused, unsent
	StoreErrors  int64      `json:"store_errors"`             // calls whose check failed
	Fallbacks    int64      `json:"fallbacks"`                // times the limit fell back
	LastError    string     `json:"last_error,omitempty"`     // the last failed check's cause, no secret in it
}

// cacheStatus is a schema's response cache: its counters since it was
// built (a reload that keeps it keeps them), and what its store holds.
type cacheStatus struct {
	Store       string `json:"store"` // memory or redis
	Mode        string `json:"mode"`  // on or shadow
	Hits        int64  `json:"hits"`
	Misses      int64  `json:"misses"`
	Bypasses    int64  `json:"bypasses"`
	Stored      int64  `json:"stored"`
	NotStored   int64  `json:"not_stored"`
	StoreErrors int64  `json:"store_errors"`
	Stale       int64  `json:"stale"`     // calls answered from a stale entry (stale-while-revalidate, stale-if-error)
	Refreshes   int64  `json:"refreshes"` // background refreshes of stale entries that ended
	// ShadowEqual and ShadowDiffer count shadow mode's comparisons of a
	// fresh entry with the fresh answer; ShadowDifferences are the recent
	// ones that differed, newest first (kinds and paths, no values).
	ShadowEqual       int64                        `json:"shadow_equal"`
	ShadowDiffer      int64                        `json:"shadow_differ"`
	ShadowDifferences []respcache.ShadowDifference `json:"shadow_differences,omitempty"`
	HitRatio          float64                      `json:"hit_ratio"` // hits / (hits + misses); 0 before any lookup
	// Entries and Bytes are what the store holds; nil where it cannot
	// tell cheaply (Redis).
	Entries *int64 `json:"entries,omitempty"`
	Bytes   *int64 `json:"bytes,omitempty"`
	// Health is the store's: "ok", or why it is not asked (a Redis store
	// paused after repeated failures).
	Health string `json:"health"`
}

// canaryStatus is a schema's share now and its recent changes.
type canaryStatus struct {
	canary.SchemaState
	// History is the share after each recent change, newest first.
	History []shareChange `json:"history"`
}

// shareChange is one point of a canary share's history.
type shareChange struct {
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
	Share  float64   `json:"share"`
}

// routeStatus is one route of a schema: the serving one, and a shadow's
// or canary's candidate.
type routeStatus struct {
	Role    string          `json:"role"` // primary, candidate, or rollout (the serving route only the runtime rollout uses)
	Path    string          `json:"path"`
	Engine  string          `json:"engine,omitempty"`
	Breaker string          `json:"breaker"` // closed, half_open, open; "off" without a breaker
	Conns   *connStatus     `json:"conns,omitempty"`
	Addrs   []addressStatus `json:"addresses,omitempty"`
}

type connStatus struct {
	Open int `json:"open"`
	Idle int `json:"idle"`
}

type addressStatus struct {
	Address   string `json:"address"`
	Conns     int    `json:"conns"`
	Idle      int    `json:"idle"`
	InFlight  int    `json:"in_flight"`
	Ejected   bool   `json:"ejected"`
	Ejections int    `json:"ejections"`
	Gone      bool   `json:"gone"`
}

// statusNow gathers the state in force.
func (inv *Transport) statusNow() status {
	s := status{Path: string(inv.path), Mode: "plain", At: time.Now().UTC(), Events: inv.recent.snapshot(), Rollout: inv.rollout.status()}
	switch {
	case inv.canary != nil:
		s.Mode = "canary"
	case inv.shadow != nil:
		s.Mode = "shadow"
	}
	st := inv.state.Load()
	if st == nil {
		s.Closed = true
		return s
	}
	var cs canary.State
	if inv.canary != nil {
		cs = inv.canary.judge.State()
	}
	for _, name := range slices.Sorted(maps.Keys(st.schemas)) {
		e := st.schemas[name]
		ss := schemaStatus{Name: name, URL: plainURL(e.primary)}
		for _, r := range e.routes() {
			ss.Routes = append(ss.Routes, routeStatusOf(r))
		}
		ss.Rollout = e.share.status()
		if c := e.cache; c.cache != nil {
			ss.Cache = cacheStatusOf(c)
		}
		if l := e.limit; l.limiter != nil {
			ss.RateLimit = rateLimitStatusOf(l)
		}
		if p := e.apq; p != nil {
			ss.PersistedQueries = &persistedStatus{GET: p.GET(), On: p.On(), Off: p.Off(), PersistedQueryCounts: p.Counts()}
		}
		if c, ok := cs.Schemas[name]; ok && e.judge != nil {
			ss.Canary = &canaryStatus{SchemaState: c, History: history(s.Events, name)}
		}
		s.Schemas = append(s.Schemas, ss)
	}
	return s
}

// cacheStatusOf is the status of c.
func cacheStatusOf(c schemaCache) *cacheStatus {
	n := c.cache.Counts()
	cs := &cacheStatus{Store: c.settings.Store, Mode: c.settings.Mode, ShadowEqual: n.ShadowEqual, ShadowDiffer: n.ShadowDiffer,
		ShadowDifferences: c.cache.ShadowDifferences(), Hits: n.Hits, Misses: n.Misses, Bypasses: n.Bypasses, Stored: n.Stored,
		NotStored: n.NotStored, StoreErrors: n.StoreErrors, Stale: n.Stale, Refreshes: n.Refreshes, Health: c.cache.Health()}
	if looked := n.Hits + n.Misses; looked > 0 {
		cs.HitRatio = float64(n.Hits) / float64(looked)
	}
	if entries, bytes, ok := c.cache.Store().Stats(); ok {
		cs.Entries, cs.Bytes = &entries, &bytes
	}
	return cs
}

// rateLimitStatusOf is the status of l.
func rateLimitStatusOf(l rateLimit) *rateLimitStatus {
	ls := &rateLimitStatus{Store: l.settings.Store, RequestsPerSecond: l.settings.RequestsPerSecond, Burst: l.settings.Burst,
		State: "local", Limited: l.limited.Load()}
	if l.fleet == nil {
		return ls
	}
	h := l.fleet.Health()
	ls.State, ls.OnStoreError = "shared", l.settings.OnStoreError
	if !h.Shared {
		ls.State = "fallen_back"
	}
	if !h.Since.IsZero() {
		since := h.Since.UTC()
		ls.Since = &since
	}
	ls.StoreErrors, ls.Fallbacks, ls.LastError = h.StoreErrors, h.Fallbacks, h.LastError
	return ls
}

// plainURL is r's URL as the status page may show it.
func plainURL(r *route) string {
	if r == nil || r.url == nil {
		return ""
	}
	return redact.Request(r.url)
}

func routeStatusOf(r *route) routeStatus {
	rs := routeStatus{Role: "primary", Path: string(r.path), Engine: r.engine, Breaker: "off"}
	switch {
	case r.candidate:
		rs.Role = "candidate"
	case r.alt:
		rs.Role = "rollout"
	}
	if b := r.res.breaker; b != nil {
		rs.Breaker = b.State().String()
	}
	if conns := r.desc.Conns; conns != nil {
		open, idle := conns()
		rs.Conns = &connStatus{Open: open, Idle: idle}
	}
	if addrs := r.desc.Addresses; addrs != nil {
		for _, a := range addrs() {
			rs.Addrs = append(rs.Addrs, addressStatus{Address: a.Address.String(), Conns: a.Conns, Idle: a.Idle,
				InFlight: a.InFlight, Ejected: a.Ejected, Ejections: a.Ejections, Gone: a.Gone})
		}
	}
	return rs
}

// history is schema's share changes among events, newest first.
func history(events []statusEvent, schema string) []shareChange {
	out := []shareChange{}
	for _, ev := range events {
		if ev.Schema == schema && ev.Share != nil {
			out = append(out, shareChange{At: ev.At, Reason: strings.TrimPrefix(ev.Kind, "canary_"), Share: *ev.Share})
		}
	}
	return out
}

// formatShare writes a share from 0 to 1 as a percentage: "5%", "12.5%".
func formatShare(f float64) string {
	return strconv.FormatFloat(f*100, 'f', -1, 64) + "%"
}

func (inv *Transport) serveStatus(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Vary", "Accept")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	s := inv.statusNow()
	if wantsJSON(r) {
		b, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			http.Error(w, "status: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(append(b, '\n'))
		return
	}
	writeStatusPage(w, s)
}

// wantsJSON is the content negotiation: ?format=json or ?format=html
// decide; else JSON when Accept names application/json (or a +json type)
// and not text/html, so that a browser, which asks for text/html first,
// gets the page, and curl's */* gets it too.
func wantsJSON(r *http.Request) bool {
	switch r.URL.Query().Get("format") {
	case "json":
		return true
	case "html":
		return false
	}
	json, html := false, false
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || params["q"] == "0" {
			continue
		}
		switch {
		case mt == "text/html", mt == "application/xhtml+xml":
			html = true
		case mt == "application/json", strings.HasSuffix(mt, "+json"):
			json = true
		}
	}
	return json && !html
}
