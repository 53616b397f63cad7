package sockets

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// outlierPool is a pool with n addresses in service and the given rules,
// for outcome's bounds.
func outlierPool(n int, o outlierRules) *pool {
	p := &pool{}
	p.outlier = o
	p.port = "80"
	for i := range n {
		p.addrs = append(p.addrs, newAddress(netip.MustParseAddr(fmt.Sprintf("10.0.0.%d", i+1)), "80"))
	}
	p.nlive = n
	return p
}

var envoyRules = outlierRules{on: true, consecutive: 5, interval: 10 * time.Second, base: 30 * time.Second, max: 300 * time.Second, percent: 10}

// failAll fails every address of p consecutive times, in turn, and
// returns how many were ejected.
func failAll(p *pool) (ejected int) {
	for _, a := range p.addrs {
		for range p.outlier.consecutive {
			if _, ok := p.outcome(a, failed); ok {
				ejected++
			}
		}
	}
	return ejected
}

// TestOutlierBounds: how many addresses may be out at once, by the number
// of addresses and max_ejection_percent: at least one may be, at least
// one always stays, and a lone address never is.
func TestOutlierBounds(t *testing.T) {
	for _, tc := range []struct {
		n, percent, want int
	}{
		{1, 10, 0}, {2, 10, 1}, {3, 10, 1}, {3, 100, 2}, {10, 10, 1}, {20, 10, 2}, {20, 50, 10}, {4, 100, 3},
	} {
		t.Run(fmt.Sprintf("%d addresses %d%%", tc.n, tc.percent), func(t *testing.T) {
			o := envoyRules
			o.percent = tc.percent
			p := outlierPool(tc.n, o)
			defer p.stopAddressing()
			if got := failAll(p); got != tc.want {
				t.Errorf("%d ejected, want %d", got, tc.want)
			}
		})
	}
}

// TestOutlierRun: only failures in a row eject: a success ends the run;
// with ejection off nothing is ejected.
func TestOutlierRun(t *testing.T) {
	p := outlierPool(3, envoyRules)
	defer p.stopAddressing()
	a := p.addrs[0]
	for i := range 20 {
		v := failed
		if i%4 == 3 {
			v = succeeded
		}
		if _, ok := p.outcome(a, v); ok {
			t.Fatalf("ejected at outcome %d though no five failures were in a row", i)
		}
	}
	off := envoyRules
	off.on = false
	q := outlierPool(3, off)
	if got := failAll(q); got != 0 {
		t.Errorf("%d ejected with outlier detection off", got)
	}
}

// TestOutlierDurations: an ejection lasts base_ejection times the times
// ejected, at most max_ejection; every interval back in service takes one
// off the multiplier.
func TestOutlierDurations(t *testing.T) {
	o := envoyRules
	o.max = 80 * time.Second
	p := outlierPool(3, o)
	defer p.stopAddressing()
	a := p.addrs[0]
	eject := func() time.Duration {
		t.Helper()
		for i := range o.consecutive {
			ev, ok := p.outcome(a, failed)
			if ok != (i == o.consecutive-1) {
				t.Fatalf("failure %d: ejected %v", i+1, ok)
			}
			if ok {
				if !ev.Ejected || ev.Address != a.ip || ev.Failures != o.consecutive {
					t.Fatalf("event %+v", ev)
				}
				return ev.For
			}
		}
		return 0
	}
	back := func(ago time.Duration) {
		p.endEjection(a)
		a.returned = time.Now().Add(-ago)
	}
	if d := eject(); d != 30*time.Second {
		t.Errorf("first ejection %v, want 30s", d)
	}
	back(0)
	if d := eject(); d != 60*time.Second {
		t.Errorf("second ejection %v, want 60s", d)
	}
	back(0)
	if d := eject(); d != 80*time.Second {
		t.Errorf("third ejection %v, want 80s (max_ejection)", d)
	}
	back(25 * time.Second) // two intervals: the multiplier goes from 3 to 1
	if d := eject(); d != 60*time.Second {
		t.Errorf("ejection after two intervals back %v, want 60s (multiplier 2)", d)
	}
}

// TestOutlierDurationsSaturate: a base_ejection so large that base x n
// overflows gives the longest ejection, capped by max_ejection, never a
// negative one (which would return the address at once).
func TestOutlierDurationsSaturate(t *testing.T) {
	o := envoyRules
	o.base, o.max = 2000000*time.Hour, 2500000*time.Hour
	p := outlierPool(3, o)
	defer p.stopAddressing()
	a := p.addrs[0]
	for i, want := range []time.Duration{o.base, o.max, o.max} {
		var got time.Duration
		for range o.consecutive {
			if ev, ok := p.outcome(a, failed); ok {
				got = ev.For
			}
		}
		if got != want || !a.ejected {
			t.Errorf("ejection %d: for %v (ejected: %t), want %v", i+1, got, a.ejected, want)
		}
		p.endEjection(a)
		a.returned = time.Now()
	}
}

// TestSetAddrs: an answer of DNS keeps the state of the addresses it
// still has, marks the others gone until their connections end, revives
// one that comes back, and folds IPv4-mapped and repeated addresses.
func TestSetAddrs(t *testing.T) {
	p := outlierPool(0, envoyRules)
	ip := netip.MustParseAddr
	p.setAddrs([]netip.Addr{ip("10.0.0.1"), ip("::ffff:10.0.0.2"), ip("10.0.0.2")})
	if got := addrList(p); got != "10.0.0.1 10.0.0.2" || p.nlive != 2 {
		t.Fatalf("addresses %q (%d live), want 10.0.0.1 10.0.0.2", got, p.nlive)
	}
	first := p.addrs[0]
	first.failures = 3
	first.conns = 1 // a connection still open to it
	p.setAddrs([]netip.Addr{ip("10.0.0.2"), ip("10.0.0.3")})
	if got := addrList(p); got != "10.0.0.1(gone) 10.0.0.2 10.0.0.3" || p.nlive != 2 {
		t.Fatalf("addresses %q (%d live)", got, p.nlive)
	}
	if a, _ := p.target(); a == first {
		t.Error("a gone address was chosen")
	}
	// 10.0.0.2 leaves with no connection open: it is dropped at once.
	p.setAddrs([]netip.Addr{ip("10.0.0.1"), ip("10.0.0.3")})
	if got := addrList(p); got != "10.0.0.1 10.0.0.3" || p.nlive != 2 {
		t.Fatalf("addresses %q (%d live), want 10.0.0.1 back and 10.0.0.2 dropped", got, p.nlive)
	}
	if p.addrs[0] != first || first.failures != 3 {
		t.Error("an address that came back lost its state")
	}
}

func addrList(p *pool) string {
	s := ""
	for i, a := range p.addrs {
		if i > 0 {
			s += " "
		}
		s += a.ip.String()
		if a.gone {
			s += "(gone)"
		}
	}
	return s
}
