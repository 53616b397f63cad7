package backend_test

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/backend"
)

// lookup reads variables from vars only, not the process environment.
func lookup(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

// TestProxyFromEnvironment: which proxy a request goes through, for the
// variables set. want "" is a direct connection; wantErr, a request that
// fails with an error holding that text.
func TestProxyFromEnvironment(t *testing.T) {
	const refused = "refusing to use HTTP_PROXY value in CGI environment"
	for _, tc := range []struct {
		name          string
		vars          map[string]string
		url           string
		want, wantErr string
	}{
		{"nothing set", nil, "http://schema.test/graphql", "", ""},
		{"HTTP_PROXY", map[string]string{"HTTP_PROXY": "http://up:3128"}, "http://schema.test/graphql", "http://up:3128", ""},
		{"http_proxy", map[string]string{"http_proxy": "http://low:3128"}, "http://schema.test/graphql", "http://low:3128", ""},
		{"upper case first", map[string]string{"HTTP_PROXY": "http://up:3128", "http_proxy": "http://low:3128"}, "http://schema.test/graphql", "http://up:3128", ""},
		{"empty upper case falls back", map[string]string{"HTTP_PROXY": "", "http_proxy": "http://low:3128"}, "http://schema.test/graphql", "http://low:3128", ""},
		{"host:port form", map[string]string{"HTTP_PROXY": "up:3128"}, "http://schema.test/graphql", "http://up:3128", ""},
		{"HTTPS_PROXY", map[string]string{"HTTPS_PROXY": "http://secure:3128", "HTTP_PROXY": "http://up:3128"}, "https://schema.test/graphql", "http://secure:3128", ""},
		{"https_proxy", map[string]string{"https_proxy": "http://secure:3128"}, "https://schema.test/graphql", "http://secure:3128", ""},
		{"HTTPS_PROXY not for http", map[string]string{"HTTPS_PROXY": "http://secure:3128"}, "http://schema.test/graphql", "", ""},

		{"localhost", map[string]string{"HTTP_PROXY": "http://up:3128"}, "http://localhost:4001/graphql", "", ""},
		{"localhost over https", map[string]string{"HTTPS_PROXY": "http://secure:3128"}, "https://localhost/graphql", "", ""},
		{"loopback v4", map[string]string{"HTTP_PROXY": "http://up:3128"}, "http://127.0.0.1:4001/graphql", "", ""},
		{"loopback v4, other address", map[string]string{"HTTP_PROXY": "http://up:3128"}, "http://127.1.2.3/graphql", "", ""},
		{"loopback v6", map[string]string{"HTTP_PROXY": "http://up:3128"}, "http://[::1]:4001/graphql", "", ""},

		{"NO_PROXY host", map[string]string{"HTTP_PROXY": "http://up:3128", "NO_PROXY": "schema.test"}, "http://schema.test/graphql", "", ""},
		{"no_proxy host", map[string]string{"HTTP_PROXY": "http://up:3128", "no_proxy": "schema.test"}, "http://schema.test/graphql", "", ""},
		{"NO_PROXY subdomain", map[string]string{"HTTPS_PROXY": "http://secure:3128", "NO_PROXY": ".test"}, "https://schema.test/graphql", "", ""},
		{"NO_PROXY other host", map[string]string{"HTTP_PROXY": "http://up:3128", "NO_PROXY": "other.test"}, "http://schema.test/graphql", "http://up:3128", ""},
		{"NO_PROXY star", map[string]string{"HTTP_PROXY": "http://up:3128", "NO_PROXY": "*"}, "http://schema.test/graphql", "", ""},

		// Under CGI a client can set HTTP_PROXY (httpoxy): an http request
		// fails rather than go through it, as with Go's own function.
		{"CGI refuses HTTP_PROXY", map[string]string{"REQUEST_METHOD": "GET", "HTTP_PROXY": "http://evil:3128"}, "http://schema.test/graphql", "", refused},
		{"CGI refuses http_proxy", map[string]string{"REQUEST_METHOD": "POST", "http_proxy": "http://evil:3128"}, "http://schema.test/graphql", "", refused},
		{"CGI keeps HTTPS_PROXY", map[string]string{"REQUEST_METHOD": "GET", "HTTP_PROXY": "http://evil:3128", "HTTPS_PROXY": "http://secure:3128"}, "https://schema.test/graphql", "http://secure:3128", ""},
		{"CGI without HTTP_PROXY", map[string]string{"REQUEST_METHOD": "GET", "HTTPS_PROXY": "http://secure:3128"}, "http://schema.test/graphql", "", ""},
		{"empty REQUEST_METHOD is not CGI", map[string]string{"REQUEST_METHOD": "", "HTTP_PROXY": "http://up:3128"}, "http://schema.test/graphql", "http://up:3128", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxy := backend.ProxyFromEnvironment(lookup(tc.vars))
			req, err := http.NewRequest(http.MethodPost, tc.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := proxy(req)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || got != nil {
					t.Errorf("proxy(%s) = %q, %v; want nil and an error with %q", tc.url, urlString(got), err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("proxy(%s) error: %v", tc.url, err)
			}
			if s := urlString(got); s != tc.want {
				t.Errorf("proxy(%s) = %q, want %q", tc.url, s, tc.want)
			}
		})
	}
}

// TestProxyReadOnce: the variables are read when the function is built;
// a later change does not move requests.
func TestProxyReadOnce(t *testing.T) {
	vars := map[string]string{"HTTP_PROXY": "http://up:3128"}
	proxy := backend.ProxyFromEnvironment(lookup(vars))
	vars["HTTP_PROXY"] = "http://changed:3128"
	req, _ := http.NewRequest(http.MethodGet, "http://schema.test/", nil)
	if got, err := proxy(req); err != nil || urlString(got) != "http://up:3128" {
		t.Errorf("proxy = %q, %v; want the value read when built, %q", urlString(got), err, "http://up:3128")
	}
}

func urlString(u *url.URL) string {
	if u == nil {
		return ""
	}
	return u.String()
}

// TestHostPort: the address a request goes to, with the scheme's port if
// the URL has none and the host in lower case.
func TestHostPort(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"http://schema.test/graphql", "schema.test:80"},
		{"https://schema.test/graphql", "schema.test:443"},
		{"http://schema.test:8080/graphql", "schema.test:8080"},
		{"https://schema.test:80/", "schema.test:80"},
		{"HTTPS://Schema.TEST/graphql", "schema.test:443"},
		{"http://UPPER:9000", "upper:9000"},
		{"http://10.0.0.1/", "10.0.0.1:80"},
		{"http://[::1]/graphql", "[::1]:80"},
		{"https://[FE80::AB]:8443/graphql", "[fe80::ab]:8443"},
		{"https://[2001:db8::1]/", "[2001:db8::1]:443"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			u, err := url.Parse(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			got := backend.HostPort(u)
			if got != tc.want {
				t.Errorf("HostPort(%s) = %q, want %q", tc.url, got, tc.want)
			}
			if _, _, err := net.SplitHostPort(got); err != nil {
				t.Errorf("HostPort(%s) = %q is not a host:port: %v", tc.url, got, err)
			}
		})
	}
}

// TestDialer: connect_timeout and keep_alive mapped onto net.Dialer, where
// Timeout 0 is no bound, KeepAlive 0 Go's default and -1 no probes.
func TestDialer(t *testing.T) {
	for _, tc := range []struct {
		name               string
		s                  env.Settings
		timeout, keepAlive time.Duration
	}{
		{"unset", env.Settings{}, 0, 0},
		{"set", env.Settings{ConnectTimeout: 3 * time.Second, KeepAlive: 30 * time.Second}, 3 * time.Second, 30 * time.Second},
		{"keep_alive off", env.Settings{ConnectTimeout: 3 * time.Second, KeepAlive: env.Off}, 3 * time.Second, -1},
		{"connect_timeout off", env.Settings{ConnectTimeout: env.Off, KeepAlive: 30 * time.Second}, 0, 30 * time.Second},
		{"both off", env.Settings{ConnectTimeout: env.Off, KeepAlive: env.Off}, 0, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := backend.Dialer(tc.s)
			if d.Timeout != tc.timeout || d.KeepAlive != tc.keepAlive {
				t.Errorf("Dialer(%+v) = {Timeout: %v, KeepAlive: %v}, want {Timeout: %v, KeepAlive: %v}",
					tc.s, d.Timeout, d.KeepAlive, tc.timeout, tc.keepAlive)
			}
		})
	}
}

func TestSameTarget(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{"http://localhost:4001/graphql", "http://LOCALHOST:4001/x?q=1", true},
		{"http://h/graphql", "http://h:80/", true},
		{"https://h/graphql", "https://h:443/", true},
		{"HTTP://h:1/", "http://h:1/", true},
		{"http://h/", "https://h:80/", false},
		{"http://h:1/", "http://h:2/", false},
		{"http://[::1]:1/", "http://[::1]:1/a", true},
		{"http://a:1/", "http://b:1/", false},
	} {
		a, _ := url.Parse(tt.a)
		b, _ := url.Parse(tt.b)
		if got := backend.SameTarget(a, b); got != tt.want {
			t.Errorf("SameTarget(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
		if n := testing.AllocsPerRun(10, func() { backend.SameTarget(a, b) }); n != 0 {
			t.Errorf("SameTarget allocates %v times", n)
		}
	}
	// url.Parse lowers the scheme; a URL built by hand may not, and its
	// scheme's default port is still the scheme's, in any case.
	upper := &url.URL{Scheme: "HTTPS", Host: "h", Path: "/graphql"}
	for _, tt := range []struct {
		b    string
		want bool
	}{
		{"https://h:443/", true},
		{"https://h:80/", false},
	} {
		b, _ := url.Parse(tt.b)
		if got := backend.SameTarget(upper, b); got != tt.want {
			t.Errorf("SameTarget(%s, %s) = %v, want %v", upper, tt.b, got, tt.want)
		}
	}
}
