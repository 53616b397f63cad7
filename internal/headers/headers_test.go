package headers

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/gateway"
)

// compile merges lists of header names into Rules that forward them.
func compile(lists ...[]string) Rules {
	var spec Spec
	for _, l := range lists {
		spec.Forward = append(spec.Forward, l...)
	}
	r, err := New(spec)
	if err != nil {
		panic(err) // without expressions, New cannot fail
	}
	return r
}

// TestCompile: forwarded names are canonicalised and deduplicated, and
// hop-by-hop names and Host are dropped whatever the lists say.
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
			got := compile(tc.lists...).names
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Names mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestApply(t *testing.T) {
	rules := compile([]string{"Authorization", "X-Request-Id", "X-Conn"})
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
		{"CR LF rejected", nil, http.Header{"X-Request-Id": {"1\r\nX-Evil: 1"}}, nil, fault.ErrInvalidHeaderValue},
		{"NUL rejected", nil, http.Header{"Authorization": {"a\x00b"}}, nil, fault.ErrInvalidHeaderValue},
		{"lone CR rejected", nil, http.Header{"X-Request-Id": {"1\rX-Evil: 1"}}, nil, fault.ErrInvalidHeaderValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.dst.Clone()
			got, err := rules.Apply(withGateway(tc.gateway), tc.dst, false)
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
	got, err := compile([]string{"X-Request-Id"}).Apply(withGateway(http.Header{"X-Request-Id": {"7"}}), dst, true)
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
		rules := compile([]string{name, "Authorization", "Host", "Connection"})
		gw := http.Header{http.CanonicalHeaderKey(name): {value}, "Connection": {connection}, "Authorization": {value}}
		got, err := rules.Apply(withGateway(gw), nil, false)
		if err != nil {
			if !errors.Is(err, fault.ErrInvalidHeaderValue) {
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

func withGateway(h http.Header) context.Context {
	r, _ := http.NewRequest("POST", "http://gateway/graphql", nil)
	r.Header = h
	return gateway.WithRequest(context.Background(), r)
}

func TestRules(t *testing.T) {
	gw := http.Header{
		"X-Trace-Id":    {"t1"},
		"X-Trace-Span":  {"s1"},
		"X-User":        {"u1"},
		"Authorization": {"Bearer g"},
		"Connection":    {"X-Trace-Span"},
	}
	rules, err := New(Spec{
		Forward:  []string{"Authorization"},
		Matching: []string{"^X-Trace-"},
		Rename:   map[string]string{"x-user": "X-Source-User", "X-Missing": "X-Never", "Connection": "X-Conn"},
		Set:      map[string]string{"X-Gateway": "fusion", "Authorization": "ignored: forwarded first", "Upgrade": "h2c"},
		Values: map[string]ValueFunc{
			"X-Computed": func(ctx context.Context, r *http.Request) (string, bool) { return r.Header.Get("X-User") + "!", true },
			"X-Skipped":  func(context.Context, *http.Request) (string, bool) { return "", false },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := rules.Apply(withGateway(gw), http.Header{"X-Gateway": {"caller"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"Authorization": {"Bearer g"},
		"X-Trace-Id":    {"t1"}, // X-Trace-Span is named by Connection
		"X-Source-User": {"u1"},
		"X-Gateway":     {"caller"}, // the caller's wins over set
		"X-Computed":    {"u1!"},
	}
	if diff := cmp.Diff(want, map[string][]string(got)); diff != "" {
		t.Errorf("headers mismatch (-want +got):\n%s", diff)
	}
	if _, err := New(Spec{Matching: []string{"("}}); err == nil {
		t.Error("New accepted an invalid expression")
	}
	bad, _ := New(Spec{Values: map[string]ValueFunc{"X-A": func(context.Context, *http.Request) (string, bool) { return "a\nb", true }}})
	if _, err := bad.Apply(context.Background(), nil, false); !errors.Is(err, fault.ErrInvalidHeaderValue) {
		t.Errorf("computed value with LF: %v", err)
	}
}

// TestMaxBytesExact: MaxBytes counts name, ": ", value and CRLF per
// value, the bytes a header line takes: at exactly that many, the headers
// are forwarded; at one byte less, Apply refuses with fault.ErrHeadersTooLarge and dst
// is returned unchanged.
func TestMaxBytesExact(t *testing.T) {
	line := func(name, value string) int { return len(name) + len(": ") + len(value) + len("\r\n") }
	for _, tc := range []struct {
		name    string
		forward []string
		gw      http.Header
		budget  int
		wantErr bool
	}{
		{"one header, exactly", []string{"X-Tenant"}, http.Header{"X-Tenant": {"acme"}}, line("X-Tenant", "acme"), false},
		{"one header, a byte less", []string{"X-Tenant"}, http.Header{"X-Tenant": {"acme"}}, line("X-Tenant", "acme") - 1, true},
		{"two values, exactly", []string{"X-Tenant"}, http.Header{"X-Tenant": {"acme", "b"}}, line("X-Tenant", "acme") + line("X-Tenant", "b"), false},
		{"two values, a byte less", []string{"X-Tenant"}, http.Header{"X-Tenant": {"acme", "b"}}, line("X-Tenant", "acme") + line("X-Tenant", "b") - 1, true},
		{"two headers, exactly", []string{"X-Tenant", "X-Id"}, http.Header{"X-Tenant": {"acme"}, "X-Id": {"7"}}, line("X-Tenant", "acme") + line("X-Id", "7"), false},
		{"two headers, a byte less", []string{"X-Tenant", "X-Id"}, http.Header{"X-Tenant": {"acme"}, "X-Id": {"7"}}, line("X-Tenant", "acme") + line("X-Id", "7") - 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rules, err := New(Spec{Forward: tc.forward, MaxBytes: tc.budget})
			if err != nil {
				t.Fatal(err)
			}
			dst := http.Header{"Content-Type": {"application/json"}}
			got, err := rules.Apply(withGateway(tc.gw), dst, false)
			if tc.wantErr {
				if !errors.Is(err, fault.ErrHeadersTooLarge) {
					t.Fatalf("MaxBytes %d: err = %v, want fault.ErrHeadersTooLarge", tc.budget, err)
				}
				if len(got) != 1 || len(dst) != 1 {
					t.Errorf("refused, yet headers were added: got %v, dst %v", got, dst)
				}
				return
			}
			if err != nil {
				t.Fatalf("MaxBytes %d: %v", tc.budget, err)
			}
			for name, values := range tc.gw {
				if !slices.Equal(got[name], values) {
					t.Errorf("%s = %q, want %q forwarded", name, got[name], values)
				}
			}
		})
	}
}

// TestApplyRefuses: whichever rule adds a header (forward, matching,
// rename, set, computed), a value with CR, LF or NUL fails Apply with
// fault.ErrInvalidHeaderValue and headers over MaxBytes with
// fault.ErrHeadersTooLarge; the error names the header, and dst is
// returned as it was.
func TestApplyRefuses(t *testing.T) {
	computed := func(v string, maxBytes int) Spec {
		return Spec{Values: map[string]ValueFunc{"X-Computed": func(context.Context, *http.Request) (string, bool) { return v, true }}, MaxBytes: maxBytes}
	}
	long := strings.Repeat("v", 64)
	for _, tc := range []struct {
		name   string
		spec   Spec
		gw     http.Header
		header string // the header the error names
		want   error
	}{
		{"forward, CR", Spec{Forward: []string{"X-Tenant"}}, http.Header{"X-Tenant": {"a\rb"}}, "X-Tenant", fault.ErrInvalidHeaderValue},
		{"matching, LF", Spec{Matching: []string{"^X-Trace-"}}, http.Header{"X-Trace-Id": {"a\nb"}}, "X-Trace-Id", fault.ErrInvalidHeaderValue},
		{"rename, NUL", Spec{Rename: map[string]string{"X-User": "X-Source-User"}}, http.Header{"X-User": {"a\x00b"}}, "X-Source-User", fault.ErrInvalidHeaderValue},
		{"set, CR LF", Spec{Set: map[string]string{"X-Api-Key": "k\r\nX-Evil: 1"}}, nil, "X-Api-Key", fault.ErrInvalidHeaderValue},
		{"computed, CR", computed("a\rb", 0), nil, "X-Computed", fault.ErrInvalidHeaderValue},
		{"forward, too large", Spec{Forward: []string{"X-Tenant"}, MaxBytes: 32}, http.Header{"X-Tenant": {long}}, "X-Tenant", fault.ErrHeadersTooLarge},
		{"matching, too large", Spec{Matching: []string{"^X-Trace-"}, MaxBytes: 32}, http.Header{"X-Trace-Id": {long}}, "X-Trace-Id", fault.ErrHeadersTooLarge},
		{"rename, too large", Spec{Rename: map[string]string{"X-User": "X-Source-User"}, MaxBytes: 32}, http.Header{"X-User": {long}}, "X-Source-User", fault.ErrHeadersTooLarge},
		{"set, too large", Spec{Set: map[string]string{"X-Api-Key": long}, MaxBytes: 32}, nil, "X-Api-Key", fault.ErrHeadersTooLarge},
		{"computed, too large", computed(long, 32), nil, "X-Computed", fault.ErrHeadersTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rules, err := New(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			dst := http.Header{"Content-Type": {"application/json"}}
			got, err := rules.Apply(withGateway(tc.gw), dst, false)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Apply = %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.header) {
				t.Errorf("Apply error %q does not name %s", err, tc.header)
			}
			if len(got) != 1 || len(dst) != 1 {
				t.Errorf("refused, yet headers were added: got %v, dst %v", got, dst)
			}
		})
	}
}
