package redact

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct {
		name, raw, want string
	}{
		{"no userinfo", "http://products:4001/graphql", "http://products:4001/graphql"},
		{"no userinfo, written as it was", "HTTP://Products/graphql", "HTTP://Products/graphql"},
		{"empty", "", ""},
		{"relative", "/graphql", "/graphql"},
		{"password", "http://svc:s3cr3t@127.0.0.1:4001/graphql", "http://svc:xxxxx@127.0.0.1:4001/graphql"},
		{"password, port out of range (parses)", "http://svc:s3cr3t@127.0.0.1:99999/graphql", "http://svc:xxxxx@127.0.0.1:99999/graphql"},
		{"empty password", "http://svc:@host/graphql", "http://svc:xxxxx@host/graphql"},
		{"user name only: as url.URL.Redacted", "http://svc@host/graphql", "http://svc@host/graphql"},
		{"@ in the password", "http://svc:a@b@host/graphql", "http://svc:xxxxx@host/graphql"},
		{"scheme-relative", "//svc:s3cr3t@host/graphql", "//svc:xxxxx@host/graphql"},
		{"does not parse", "http://svc:s3cr3t@[::1", "http://xxxxx@[::1"},
		{"does not parse: '/' in the password", "http://svc:s3cr/3t@host/graphql", "http://xxxxx@host/graphql"},
		{"does not parse: '#' in the password", "http://svc:s3cr#3t@host/graphql", "http://xxxxx@host/graphql"},
		{"does not parse: space in the password", "http://svc:s3 cr3t@host/graphql", "http://xxxxx@host/graphql"},
		{"does not parse, no userinfo", "http://[::1", "http://[::1"},
		{"does not parse: '@' in the password", "http://svc:p@ss@[::1", "http://xxxxx@[::1"},
		{"no //: the scheme is read as svc", "svc:s3cr3t@products/graphql", "xxxxx@products/graphql"},
		{"proxy word", "environment", "environment"},
		{"query value", "http://products:4001/graphql?api_key=s3cr3t", "http://products:4001/graphql?api_key=xxxxx"},
		{"query values, names kept", "http://h/graphql?a=1&api_key=s3cr3t&&b", "http://h/graphql?a=xxxxx&api_key=xxxxx&&xxxxx"},
		{"query and password", "http://svc:pw@h/graphql?token=s3cr3t#frag", "http://svc:xxxxx@h/graphql?token=xxxxx#frag"},
		{"does not parse, query", "http://svc:s3cr/3t@host/graphql?key=s3cr3t#f", "http://xxxxx@host/graphql?key=xxxxx#f"},
		{"does not parse, no userinfo, query", "http://[::1/graphql?key=s3cr3t", "http://[::1/graphql?key=xxxxx"},
		{"empty query", "http://h/graphql?", "http://h/graphql?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := URL(tc.raw); got != tc.want {
				t.Errorf("URL(%q) = %q, want %q", tc.raw, got, tc.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, raw, want, secret string
	}{
		{"missing bracket", "http://svc:s3cr3t@[::1", `parse "http://xxxxx@[::1": missing ']' in host`, "s3cr3t"},
		{"port from the password", "http://svc:s3cr/3t@host/graphql", `parse "http://xxxxx@host/graphql": invalid port "xxxxx" after host`, "s3cr"},
		{"port from the password, before '#'", "http://svc:s3cr#3t@host/graphql", `parse "http://xxxxx@host/graphql": invalid port "xxxxx" after host`, "s3cr"},
		{"escape in the password", "http://svc:s3%zzcr@host/", `parse "http://xxxxx@host/": invalid URL escape "xxxxx"`, "%zz"},
		{"no userinfo: the cause stays", "http://products:4x/graphql", `parse "http://products:4x/graphql": invalid port ":4x" after host`, ""},
		{"no userinfo, no scheme", "127.0.0.1:4001/graphql", `parse "127.0.0.1:4001/graphql": first path segment in URL cannot contain colon`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := Parse(tc.raw)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want an error", tc.raw, u)
			}
			if err.Error() != tc.want {
				t.Errorf("Parse(%q) error:\n got %s\nwant %s", tc.raw, err, tc.want)
			}
			var ue *url.Error
			if !errors.As(err, &ue) || ue.Op != "parse" {
				t.Errorf("Parse(%q) error %T, want a *url.Error of op parse", tc.raw, err)
			}
			if tc.secret != "" && strings.Contains(err.Error(), tc.secret) {
				t.Errorf("Parse(%q) error holds %q: %s", tc.raw, tc.secret, err)
			}
		})
	}
	if u, err := Parse("http://svc:s3cr3t@host/graphql"); err != nil || u.User.Username() != "svc" {
		t.Errorf("Parse of a valid URL = %v, %v; want it parsed as url.Parse does", u, err)
	}
}

func TestRequest(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{"http://products:4001/graphql", "http://products:4001/graphql"},
		{"http://svc:s3cr3t@products:4001/graphql", "http://products:4001/graphql"},
		{"http://apikey@products/graphql", "http://products/graphql"},
		{"http://products/graphql?query=%7Bme%7D&variables=%7B%22card%22%3A4111%7D", "http://products/graphql"},
		{"http://products/graphql?", "http://products/graphql"},
		{"http://products/graphql#frag", "http://products/graphql"},
		{"http://[::1]:8080/a%2Fb", "http://[::1]:8080/a%2Fb"},
	} {
		u, err := url.Parse(tc.raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := Request(u); got != tc.want {
			t.Errorf("Request(%q) = %q, want %q", tc.raw, got, tc.want)
		}
	}
	if got := Request(nil); got != "" {
		t.Errorf("Request(nil) = %q, want empty", got)
	}
}
