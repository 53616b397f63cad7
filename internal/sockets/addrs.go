package sockets

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/setting"
)

// The addresses of a pool (docs/design.md, "The pool with addresses").
//
// A pool whose host is a DNS name resolves it when it starts, then every
// dns_refresh, and at once when every known address has failed to
// connect. Each request goes to the address with the fewest requests in
// flight (ties in turn), on an idle connection to it, or on a new one;
// only when the pool may open no connection does it take an idle
// connection to another address in service. An address DNS no longer
// gives takes no new request: its idle connections close at once, its
// busy ones when their requests end. An address that fails
// consecutive_failures times in a row is ejected (outlier detection),
// within max_ejection_percent, and at least one address stays in service.

// resolveTimeout bounds one lookup of a pool's host.
const resolveTimeout = 5 * time.Second

// address is one address a pool's host resolves to. Its counts and state
// are guarded by pool.mu; ip and dialTo are immutable.
type address struct {
	ip     netip.Addr
	dialTo string // ip:port, what the pool dials

	conns   int // its connections in pool.conns
	nidle   int // those on the idle list
	dialing int // dials to it under way
	claims  int // requests holding one of its connections, or waiting for a dial to it
	dials   int // dials to it so far

	gone bool // the last answer of DNS did not have it

	failures      int  // failures in a row (outcome)
	connectFailed bool // its last dial failed
	ejected       bool // out of service until unEject fires
	ejections     int  // the ejection multiplier
	returned      time.Time
	unEject       *time.Timer // ends the current ejection; nil before the first
}

// load is what the pool balances requests on: the requests in flight to a: its
// busy connections (an HTTP/1 connection carries one request until its
// body ends) and dials, or, once the pool multiplexes, the requests that
// hold one of its connections (until their headers). p.mu is held.
func (p *pool) load(a *address) int {
	if p.multiplexed.Load() {
		return a.claims + a.dialing
	}
	return a.conns - a.nidle + a.dialing
}

// outlierRules are a pool's outlier_detection settings. Immutable.
type outlierRules struct {
	on          bool
	consecutive int
	interval    time.Duration
	base, max   time.Duration
	percent     int
}

func outlierOf(s env.OutlierSettings) outlierRules {
	return outlierRules{
		on:          s.Enabled.On(),
		consecutive: s.ConsecutiveFailures,
		interval:    setting.Bound(s.Interval),
		base:        setting.Bound(s.BaseEjection),
		max:         setting.Bound(s.MaxEjection),
		percent:     s.MaxEjectionPercent,
	}
}

// addressing is the part of a pool that knows its addresses: set up by
// resolveFrom before the pool's first get. The fields marked immutable are
// written there only; the others are guarded by pool.mu.
type addressing struct {
	resolver backend.Resolver // immutable; nil: the pool dials its host by name
	host     string           // immutable: what resolver looks up
	port     string           // immutable
	refresh  time.Duration    // immutable: dns_refresh; 0 resolves once
	outlier  outlierRules     // immutable
	// onAddress receives the ejections and returns (nil: none); it runs
	// without pool.mu. Immutable.
	onAddress func(context.Context, backend.AddressEvent)

	// resolved is closed once the first lookup has ended, so that a dial
	// that needs an address waits for it; nil when nothing is looked up.
	// Immutable pointer; closed by resolve under resolvedOnce.
	resolved     chan struct{}
	resolvedOnce sync.Once
	// refreshTimer runs resolve; reset by resolve, stopped by drain.
	// Immutable pointer.
	refreshTimer *time.Timer
	// answer receives the answer of a lookup that outlived its wait (a
	// resolver that ignored its context); nil when none is out. Owned by
	// resolve, which runs one at a time.
	answer chan lookupAnswer

	// The known addresses, in the order DNS gave them, and those gone
	// from its answer that still have connections. Guarded by pool.mu.
	addrs     []*address
	nlive     int  // addrs not gone
	nejected  int  // addrs ejected (never gone)
	turn      int  // where choose starts: after the address it chose last, so that ties go in turn
	resolving bool // a lookup is under way, or asked for (resolveNow)
	// looking: resolve runs (its lookup is out). The refresh timer may
	// fire while resolveNow resets it to 0; of the two runs, the second
	// finds looking set and leaves the lookup to the first: lookup and
	// its answer field are one run's at a time.
	looking   bool
	lookupErr error // the last lookup's failure; nil once one answered
}

// resolveFrom sets up p's addresses for a pool of k built without a Dial
// hook: a name is resolved with r (net.DefaultResolver when nil) unless
// dns_refresh is off, an IP address is its own one address, a unix socket
// or a proxy has none the pool could choose. It starts the first lookup.
func (p *pool) resolveFrom(k *key, r backend.Resolver, onAddress func(context.Context, backend.AddressEvent)) {
	s := k.settings
	host, port, err := net.SplitHostPort(k.addr)
	if err != nil || !HasAddresses(s) {
		return
	}
	p.port, p.outlier, p.onAddress = port, outlierOf(s.OutlierDetection), onAddress
	if ip, err := netip.ParseAddr(host); err == nil {
		p.addrs = []*address{newAddress(ip.Unmap(), port)}
		p.nlive = 1
		return
	}
	if s.DNSRefresh < 0 {
		return // off: Go's dialer resolves at each dial
	}
	if r == nil {
		r = net.DefaultResolver
	}
	p.resolver, p.host, p.refresh = r, host, setting.Bound(s.DNSRefresh)
	p.resolved = make(chan struct{})
	p.resolving = true
	// Armed once the field is set: resolve reads it.
	p.refreshTimer = time.AfterFunc(time.Hour, p.resolve)
	p.refreshTimer.Reset(0)
}

// HasAddresses reports whether the sockets pool of a schema with
// settings s chooses among the addresses of its host: not for a
// unix_socket or through a proxy (nor with a SchemaOptions.Dial hook,
// which settings do not show). A host written as an IP address is its one
// address; a name is resolved unless dns_refresh is off.
func HasAddresses(s env.Settings) bool {
	return s.UnixSocket == "" && (s.Proxy == "" || strings.EqualFold(s.Proxy, "off"))
}

func newAddress(ip netip.Addr, port string) *address {
	return &address{ip: ip, dialTo: net.JoinHostPort(ip.String(), port)}
}

// resolve looks the host up and takes the answer in (setAddrs); a failed
// or empty answer keeps the addresses known. It runs on the refresh
// timer's goroutine, and again every dns_refresh, one run at a time: a
// run that finds another under way (the timer fired as resolveNow reset
// it) leaves it to that one, whose answer is as new.
func (p *pool) resolve() {
	p.mu.Lock()
	if p.looking {
		p.mu.Unlock()
		return
	}
	// Set here too, not only by resolveNow: a connect failure during a
	// refresh's lookup then starts no second one.
	p.looking, p.resolving = true, true
	p.mu.Unlock()
	ips, err := p.lookup()
	p.mu.Lock()
	p.looking, p.resolving = false, false
	if p.drained {
		p.mu.Unlock()
		p.resolvedOnce.Do(func() { close(p.resolved) })
		return
	}
	var stale []*conn
	if err == nil && len(ips) == 0 {
		err = errors.New("no address in the answer")
	}
	p.lookupErr = err
	if err == nil {
		stale = p.setAddrs(ips)
	} else if p.log != nil {
		p.log.Warn("resolving the source schema's host failed: the addresses known stay in use", "source_schema", p.schema, "host", p.host, "error", err.Error(), "known", p.nlive)
	}
	if p.refresh > 0 {
		p.refreshTimer.Reset(p.refresh)
	}
	p.mu.Unlock()
	p.resolvedOnce.Do(func() { close(p.resolved) })
	closeAll(stale)
}

// lookup asks the resolver for the host's addresses, and waits at most
// resolveTimeout (or until the pool drains) whatever the resolver does
// with its context: one that ignores it leaves its lookup running, and
// the next refresh waits for that same lookup instead of starting
// another, so that a hung resolver holds one goroutine, not one per
// refresh. It runs on the refresh timer's goroutine, one at a time.
func (p *pool) lookup() ([]netip.Addr, error) {
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	defer cancel()
	if p.dialStop != nil {
		stop := context.AfterFunc(p.dialStop, cancel)
		defer stop()
	}
	if p.answer != nil {
		select {
		case a := <-p.answer:
			p.answer = nil
			if a.err == nil {
				return a.ips, nil // late, and newer than what the pool knows
			}
		default: // still out: this refresh waits for it too
		}
	}
	if p.answer == nil {
		answer := make(chan lookupAnswer, 1)
		p.answer = answer
		go func() {
			ips, err := p.resolver.LookupNetIP(ctx, "ip", p.host)
			answer <- lookupAnswer{ips, err}
		}()
	}
	select {
	case a := <-p.answer:
		p.answer = nil
		return a.ips, a.err
	case <-ctx.Done():
		return nil, fmt.Errorf("resolver %T gave no answer for host %q within %v: %w", p.resolver, p.host, resolveTimeout, ctx.Err())
	}
}

// lookupAnswer is what one LookupNetIP returned.
type lookupAnswer struct {
	ips []netip.Addr
	err error
}

// resolveNow looks the host up at once, unless a lookup is under way:
// every known address failed to connect. p.mu is held.
func (p *pool) resolveNow() {
	if p.resolver == nil || p.resolving || p.drained {
		return
	}
	p.resolving = true
	p.refreshTimer.Reset(0)
}

// setAddrs takes in an answer of DNS: new addresses join, known ones stay
// with their state, and those not in it are gone: they take no new
// request, their idle connections leave the pool (returned, for the
// caller to close once p.mu is released), and their busy ones close when
// their requests end (update). p.mu is held.
func (p *pool) setAddrs(ips []netip.Addr) (stale []*conn) {
	in := func(a *address) bool {
		for _, ip := range ips {
			if ip.Unmap() == a.ip {
				return true
			}
		}
		return false
	}
	changed := false
	// A snapshot: removing an address's last connection (remove) drops a
	// gone address from p.addrs in place.
	for _, a := range slices.Clone(p.addrs) {
		switch keep := in(a); {
		case !keep && !a.gone:
			a.gone, changed = true, true
			p.nlive--
			if a.ejected {
				p.endEjection(a)
			}
			for c := p.idleTop; c != nil; {
				next := c.idleNext
				if c.a == a && c.idle() {
					p.remove(c)
					stale = append(stale, c)
				}
				c = next
			}
		case keep && a.gone:
			a.gone, changed = false, true
			p.nlive++
			p.level(a)
		}
	}
	for _, ip := range ips {
		ip = ip.Unmap()
		known := false
		for _, a := range p.addrs {
			known = known || a.ip == ip
		}
		if !known {
			a := newAddress(ip, p.port)
			p.level(a)
			p.addrs = append(p.addrs, a)
			p.nlive++
			changed = true
		}
	}
	p.addrs = deleteGone(p.addrs)
	// At least one address stays in service: one that DNS removed may
	// have left only ejected ones.
	for _, a := range p.addrs {
		if p.nejected < p.nlive || p.nlive == 0 {
			break
		}
		if a.ejected {
			p.endEjection(a)
		}
	}
	if changed {
		p.signal() // a waiter may now dial to a new address
	}
	return stale
}

// deleteGone drops the gone addresses that have no connection left.
func deleteGone(addrs []*address) []*address {
	out := addrs[:0]
	for _, a := range addrs {
		if !a.gone || a.conns > 0 || a.dialing > 0 {
			out = append(out, a)
		}
	}
	clear(addrs[len(out):])
	return out
}

// target is the address the next request goes to, and whether the pool
// spreads over several (then scan looks only at connections to it). Nil
// when the pool dials its host by name. p.mu is held.
func (p *pool) target() (a *address, spread bool) {
	switch {
	case p.nlive == 0:
		return nil, false
	case len(p.addrs) == 1:
		return p.addrs[0], false
	}
	return p.choose(), p.nlive > 1
}

// choose returns the address in service for a request: the one with the
// least load, then the fewest connections, further ties in turn. p.mu is
// held.
func (p *pool) choose() *address {
	return p.pick(func(a, best *address) bool {
		la, lb := p.load(a), p.load(best)
		return la < lb || (la == lb && a.conns < best.conns)
	})
}

// chooseDial returns the address in service a new connection goes to:
// among those with at most one connection (open or being dialled) more
// than the fewest, the one dialled least, further ties in turn. So the
// open connections stay within about one of even, and so do the dials
// that replace them as they close: a rule of fewest connections alone
// lets the dials drift apart, since which address's connection closes
// first is chance. An address that joins (or returns from an ejection)
// starts level with the least dialled (level), not in debt. p.mu is held.
func (p *pool) chooseDial() *address {
	fewest := -1
	for _, a := range p.addrs {
		if !a.gone && !a.ejected && (fewest < 0 || a.conns+a.dialing < fewest) {
			fewest = a.conns + a.dialing
		}
	}
	return p.pick(func(a, best *address) bool {
		okA, okB := a.conns+a.dialing <= fewest+1, best.conns+best.dialing <= fewest+1
		if okA != okB {
			return okA
		}
		return a.dials < best.dials
	})
}

// level raises a's dial count to the least of the other addresses in
// service, so that an address that joins or returns does not take every
// dial until it has caught up. p.mu is held.
func (p *pool) level(a *address) {
	least := -1
	for _, b := range p.addrs {
		if b != a && !b.gone && !b.ejected && (least < 0 || b.dials < least) {
			least = b.dials
		}
	}
	a.dials = max(a.dials, least)
}

// pick returns the address in service that is better than every other
// (better(a, best) reports whether a beats best), starting after the one
// it picked last, so that ties go to each address in service in turn,
// whichever are out. p.mu is held.
func (p *pool) pick(better func(a, best *address) bool) *address {
	var best *address
	at, n := 0, len(p.addrs)
	start := p.turn % n
	for i := range n {
		j := (start + i) % n
		a := p.addrs[j]
		if a.gone || a.ejected {
			continue
		}
		if best == nil || better(a, best) {
			best, at = a, j
		}
	}
	p.turn = at + 1
	return best
}

// serves reports whether c may carry a request for want, once the pool
// spreads over addresses: a connection to want; with want nil (a request
// that may take any address, as when the pool may open no connection to
// the one it chose), a connection to an address in service. p.mu is held.
func (c *conn) serves(want *address) bool {
	if want != nil {
		return c.a == want
	}
	return c.a == nil || (!c.a.gone && !c.a.ejected)
}

// verdict is a request's outcome as outlier detection judges it.
type verdict uint8

const (
	unjudged verdict = iota // not the address's doing: the caller left, a reload, an attempt to be sent again
	succeeded
	failed
)

// judge tells the outcome of one request to an address: a 5xx, a
// timeout, a reset or another failure of the connection count against
// it; a caller that left and an attempt backend.Resend may send again
// count neither way.
func judge(req *http.Request, resp *http.Response, err error) verdict {
	if err == nil {
		if resp.StatusCode >= 500 {
			return failed
		}
		return succeeded
	}
	if _, ok := errors.AsType[*fault.HeaderTimeoutError](err); ok {
		return failed
	}
	if _, ok := errors.AsType[*backend.AttemptError](err); ok {
		return unjudged
	}
	if ctx := req.Context(); ctx.Err() != nil {
		if _, ok := errors.AsType[*fault.RequestTimeoutError](context.Cause(ctx)); ok {
			return failed
		}
		return unjudged
	}
	return failed
}

// outcome records one outcome of a: a success ends its run of failures;
// a failure that makes consecutive_failures in a row ejects it, if the
// bounds allow. It returns the ejection's event, for the caller to send
// once p.mu is released. p.mu is held.
func (p *pool) outcome(a *address, v verdict) (ev backend.AddressEvent, ejected bool) {
	if v == succeeded {
		a.failures = 0
		return ev, false
	}
	a.failures++
	o := p.outlier
	if !o.on || a.failures < o.consecutive || a.ejected || a.gone || p.nlive < 2 {
		return ev, false
	}
	if p.nejected >= max(1, p.nlive*o.percent/100) || p.nejected+1 >= p.nlive {
		return ev, false // at least one address stays in service
	}
	now := time.Now()
	if !a.returned.IsZero() && o.interval > 0 {
		a.ejections = max(0, a.ejections-int(now.Sub(a.returned)/o.interval))
	}
	a.ejections++
	d := o.base
	if n := time.Duration(a.ejections); n > 1 {
		// Saturates: a huge base_ejection times n must not wrap to a
		// negative duration, which would return the address at once.
		if d > math.MaxInt64/n {
			d = math.MaxInt64
		} else {
			d *= n
		}
	}
	if o.max > 0 && d > o.max {
		d = o.max
	}
	failures := a.failures
	a.ejected, a.failures = true, 0
	p.nejected++
	if a.unEject == nil {
		a.unEject = time.AfterFunc(d, func() { p.endEjectionFired(a) })
	} else {
		a.unEject.Reset(d)
	}
	return backend.AddressEvent{Address: a.ip, Ejected: true, For: d, Failures: failures}, true
}

// endEjection puts a back in service. p.mu is held.
func (p *pool) endEjection(a *address) {
	a.ejected = false
	p.level(a)
	a.returned = time.Now()
	a.failures = 0
	p.nejected--
	if a.unEject != nil {
		a.unEject.Stop()
	}
	p.signal()
}

// idleOf takes the idle connections to the ejected address ip out of the
// pool, for the caller to close.
func (p *pool) idleOf(ip netip.Addr) (stale []*conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := p.idleTop; c != nil; {
		next := c.idleNext
		if c.a != nil && c.a.ip == ip && c.a.ejected && c.idle() {
			p.remove(c)
			stale = append(stale, c)
		}
		c = next
	}
	return stale
}

// endEjectionFired is an ejection's timer: a is back in service.
func (p *pool) endEjectionFired(a *address) {
	p.mu.Lock()
	if !a.ejected || p.drained {
		p.mu.Unlock()
		return
	}
	p.endEjection(a)
	p.mu.Unlock()
	// A timer returns the address: no request is the cause.
	p.addressEvent(context.Background(), backend.AddressEvent{Address: a.ip})
}

// addressEvent reports an ejection or a return, and on an ejection closes
// the address's idle connections (its busy ones close when their requests
// end, as update closes an idle connection to an ejected or gone address):
// for the ejection's length they would only take room under
// max_conns_per_host from the addresses in service. ctx is that of the
// request that caused the event, for onAddress. p.mu is not held.
func (p *pool) addressEvent(ctx context.Context, ev backend.AddressEvent) {
	if ev.Ejected {
		closeAll(p.idleOf(ev.Address))
	}
	if p.log != nil {
		if ev.Ejected {
			p.log.Warn("source schema address ejected: it gets no request for a while", "source_schema", p.schema, "address", ev.Address.String(), "failures", ev.Failures, "for", ev.For.String())
		} else {
			p.log.Info("source schema address back in service", "source_schema", p.schema, "address", ev.Address.String())
		}
	}
	if p.onAddress != nil {
		p.onAddress(ctx, ev)
	}
}

// dialFailed records that a dial to a failed: a failure for outlier
// detection, and, when every known address has failed to connect, a
// lookup at once. p.mu is held.
func (p *pool) dialFailed(a *address) (ev backend.AddressEvent, ejected bool) {
	a.connectFailed = true
	all := true
	for _, b := range p.addrs {
		all = all && (b.gone || b.connectFailed)
	}
	if all {
		p.resolveNow()
	}
	return p.outcome(a, failed)
}

// stopAddressing stops the refresh and the ejections' timers: the pool
// drains. p.mu is held.
func (p *pool) stopAddressing() {
	if p.refreshTimer != nil {
		p.refreshTimer.Stop()
	}
	for _, a := range p.addrs {
		if a.unEject != nil {
			a.unEject.Stop()
		}
	}
}

// addressStats reports p's addresses, for telemetry, the status of a
// pool and tests.
func (p *pool) addressStats() []backend.AddressStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]backend.AddressStats, 0, len(p.addrs))
	for _, a := range p.addrs {
		out = append(out, backend.AddressStats{
			Address: a.ip, Conns: a.conns, Idle: a.nidle, InFlight: p.load(a),
			Ejected: a.ejected, Ejections: a.ejections, Gone: a.gone,
		})
	}
	return out
}

// noAddress is a dial's error when the pool knows no address of its
// host. p.mu is held.
func (p *pool) noAddress() error {
	if p.lookupErr != nil {
		return fmt.Errorf("dial tcp %s: no address known for host %q: its last lookup failed: %w", net.JoinHostPort(p.host, p.port), p.host, p.lookupErr)
	}
	return fmt.Errorf("dial tcp %s: no address known for host %q yet", net.JoinHostPort(p.host, p.port), p.host)
}

// waitAddrs waits for the pool's first lookup, for a dial that needs an
// address, until ctx ends.
func (p *pool) waitAddrs(ctx context.Context) {
	if p.resolved == nil {
		return
	}
	select {
	case <-p.resolved:
	case <-ctx.Done():
	}
}
