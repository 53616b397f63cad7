package sockets

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

// TestProxyFuncHidesPassword: a proxy URL that does not parse, which
// env.Validate rejects before a pool is built, is still an error naming the
// key without the password when the pool is built from a Config that was
// not validated.
func TestProxyFuncHidesPassword(t *testing.T) {
	for _, tc := range []struct {
		name, proxy, want string
	}{
		{"missing bracket", "http://pu:s3cr3t-proxy-pw@[::1", `source_schemas.products.proxy: parse "http://xxxxx@[::1": missing ']' in host`},
		{"'/' in the password", "http://pu:s3cr3t-proxy-pw/x@proxy:3128", `source_schemas.products.proxy: parse "http://xxxxx@proxy:3128": invalid port "xxxxx" after host`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := proxyFunc("products", tc.proxy, nil)
			if err == nil {
				t.Fatalf("proxyFunc(%q) = nil error", tc.proxy)
			}
			if err.Error() != tc.want {
				t.Errorf("proxyFunc(%q) error:\n got %s\nwant %s", tc.proxy, err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cr3t-proxy-pw") {
				t.Errorf("proxyFunc(%q) error holds the password: %s", tc.proxy, err)
			}
			var ue *url.Error
			if !errors.As(err, &ue) {
				t.Errorf("proxyFunc(%q) error %v wraps no *url.Error", tc.proxy, err)
			}
		})
	}
}
