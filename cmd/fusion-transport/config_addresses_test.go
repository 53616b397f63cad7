package main

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
)

// fixedResolver answers every lookup of host with its addresses, and any
// other with an error.
type fixedResolver struct {
	host string
	ips  []netip.Addr
}

func (r fixedResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if host != r.host {
		return nil, errors.New("no such host")
	}
	return r.ips, nil
}

// TestConfigAddressesLine: the config command's addresses line, per kind
// of schema: an IP address, a name resolved, a name that does not resolve,
// dns_refresh off, and none for a unix socket or a proxy.
func TestConfigAddressesLine(t *testing.T) {
	r := fixedResolver{host: "replicas.internal", ips: []netip.Addr{
		netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("::ffff:10.0.0.3"), netip.MustParseAddr("fd00::4"),
	}}
	for _, tc := range []struct {
		name string
		ss   env.SourceSchema
		want string
	}{
		{"ip", env.SourceSchema{URL: "http://127.0.0.1:4001/graphql"}, "  addresses: 127.0.0.1"},
		{"ipv6", env.SourceSchema{URL: "http://[::1]:4001/graphql"}, "  addresses: ::1"},
		{"name", env.SourceSchema{URL: "http://replicas.internal/graphql"},
			"  addresses: 10.0.0.2, 10.0.0.3, fd00::4 (replicas.internal resolved now; dns_refresh 5s)"},
		{"unresolved", env.SourceSchema{URL: "http://gone.internal/graphql"},
			"  addresses: cannot resolve gone.internal now (no such host); dns_refresh 5s"},
		{"refresh off", env.SourceSchema{URL: "http://replicas.internal/graphql", Settings: env.Settings{DNSRefresh: env.Off}},
			"  addresses: 10.0.0.2, 10.0.0.3, fd00::4 (replicas.internal resolved now; dns_refresh off: Go's dialer resolves at each dial, no spreading, no ejection)"},
		{"refresh 30s", env.SourceSchema{URL: "http://replicas.internal/graphql", Settings: env.Settings{DNSRefresh: 30 * time.Second}},
			"  addresses: 10.0.0.2, 10.0.0.3, fd00::4 (replicas.internal resolved now; dns_refresh 30s)"},
		{"unix socket", env.SourceSchema{URL: "http://replicas.internal/graphql", Settings: env.Settings{UnixSocket: "/run/p.sock"}}, ""},
		{"proxy", env.SourceSchema{URL: "http://replicas.internal/graphql", Settings: env.Settings{Proxy: "http://proxy.internal:3128"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := env.Config{SourceSchemas: map[string]env.SourceSchema{"products": tc.ss}}
			if got := addressesLine(context.Background(), r, cfg, "products"); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
