package headers

import (
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestCompile(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lists [][]string
		want  []string
	}{
		{"empty", nil, nil},
		{"canonical and deduplicated", [][]string{{"authorization", "X-REQUEST-ID"}, {"Authorization", " x-tenant "}}, []string{"Authorization", "X-Request-Id", "X-Tenant"}},
		{"hop-by-hop and Host dropped", [][]string{{"Connection", "keep-alive", "TE", "Trailer", "Transfer-Encoding", "Upgrade", "Proxy-Authorization", "Proxy-Anything", "Host", "X-Ok"}}, []string{"X-Ok"}},
		{"blank names dropped", [][]string{{"", "  "}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Compile(tc.lists...).Names()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Names mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestApply(t *testing.T) {
	rules := Compile([]string{"Authorization", "X-Request-Id", "X-Conn"})
	for _, tc := range []struct {
		name    string
		dst     http.Header
		gateway http.Header
		want    http.Header
		err     error
	}{
		{"nothing to forward", http.Header{"A": {"1"}}, http.Header{"X-Other": {"v"}}, http.Header{"A": {"1"}}, nil},
		{"forwarded, all values", nil, http.Header{"Authorization": {"Bearer x"}, "X-Request-Id": {"1", "2"}}, http.Header{"Authorization": {"Bearer x"}, "X-Request-Id": {"1", "2"}}, nil},
		{"caller wins", http.Header{"Authorization": {"mine"}}, http.Header{"Authorization": {"theirs"}}, http.Header{"Authorization": {"mine"}}, nil},
		{"named by Connection", nil, http.Header{"Connection": {"keep-alive, x-conn"}, "X-Conn": {"v"}, "X-Request-Id": {"1"}}, http.Header{"X-Request-Id": {"1"}}, nil},
		{"CR LF rejected", nil, http.Header{"X-Request-Id": {"1\r\nX-Evil: 1"}}, nil, ErrInvalidValue},
		{"NUL rejected", nil, http.Header{"Authorization": {"a\x00b"}}, nil, ErrInvalidValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.dst.Clone()
			got, err := rules.Apply(tc.dst, tc.gateway, false)
			if !errors.Is(err, tc.err) {
				t.Fatalf("error = %v, want %v", err, tc.err)
			}
			if diff := cmp.Diff(before, tc.dst); diff != "" {
				t.Errorf("Apply modified dst (-before +after):\n%s", diff)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(map[string][]string(tc.want), map[string][]string(got), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("headers mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestApplyOwnedAddsInPlace(t *testing.T) {
	dst := http.Header{"Content-Type": {"application/json"}}
	got, err := Compile([]string{"X-Request-Id"}).Apply(dst, http.Header{"X-Request-Id": {"7"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if dst.Get("X-Request-Id") != "7" || got.Get("X-Request-Id") != "7" {
		t.Errorf("owned headers were not extended in place: dst %v, got %v", dst, got)
	}
}

// FuzzApply: whatever the gateway sends, Apply never panics, never forwards
// a hop-by-hop header or Host, and never returns a value with CR, LF or NUL.
func FuzzApply(f *testing.F) {
	f.Add("Authorization", "Bearer x", "keep-alive")
	f.Add("Connection", "close", "Authorization")
	f.Add("X-Request-Id", "a\r\nb", "")
	f.Fuzz(func(t *testing.T, name, value, connection string) {
		rules := Compile([]string{name, "Authorization", "Host", "Connection"})
		gw := http.Header{http.CanonicalHeaderKey(name): {value}, "Connection": {connection}, "Authorization": {value}}
		got, err := rules.Apply(nil, gw, false)
		if err != nil {
			if !errors.Is(err, ErrInvalidValue) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		for k, vs := range got {
			if IsHopByHop(k) {
				t.Errorf("forwarded hop-by-hop header %q", k)
			}
			for _, v := range vs {
				for _, c := range v {
					if c == '\r' || c == '\n' || c == 0 {
						t.Errorf("forwarded %q with a control character", k)
					}
				}
			}
		}
	})
}
