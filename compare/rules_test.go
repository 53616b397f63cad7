package compare_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fusiongo/transport/compare"
)

// answer is an Outcome of a 200 with a JSON body and the given headers
// (name, value, name, value...).
func answer(body string, header ...string) compare.Outcome {
	h := http.Header{"Content-Type": {"application/json"}}
	for i := 0; i+1 < len(header); i += 2 {
		h.Add(header[i], header[i+1])
	}
	return compare.Outcome{Status: 200, Header: h, Body: []byte(body)}
}

func timed(o compare.Outcome, d time.Duration) compare.Outcome {
	o.Elapsed = d
	return o
}

func TestCompareRules(t *testing.T) {
	always := func(a, b []byte) (bool, string) { return true, "" }
	cursors := func(a, b []byte) (bool, string) { return false, "the cursors differ" }
	silent := func(a, b []byte) (bool, string) { return false, "" }
	tests := []struct {
		name   string
		schema string // default "accounts"
		a, b   compare.Outcome
		rules  compare.Rules
		want   []compare.Difference
	}{
		{
			name:  "ignore path on one side only, and the Content-Length it changes",
			a:     answer(`{"data":{"id":1},"extensions":{"tracing":{"ms":3}}}`, "Content-Length", "51"),
			b:     answer(`{"data":{"id":1}}`, "Content-Length", "17"),
			rules: compare.Rules{IgnorePaths: []string{"extensions.tracing"}},
		},
		{
			name:  "ignore path leaves the rest of a member",
			a:     answer(`{"extensions":{"tracing":1,"cost":2}}`),
			b:     answer(`{"extensions":{"cost":3}}`),
			rules: compare.Rules{IgnorePaths: []string{"$.extensions.tracing"}},
			want: []compare.Difference{{
				Kind: compare.KindBody, Path: "extensions.cost", A: "2", B: "3",
				Explanation: "legacy has 2 at extensions.cost; sockets has 3",
			}},
		},
		{
			name:  "* matches every index",
			a:     answer(`{"errors":[{"message":"x","extensions":{"code":"A"}},{"message":"y","extensions":{"code":"B"}}]}`),
			b:     answer(`{"errors":[{"message":"x"},{"message":"y","extensions":{"code":"C"}}]}`),
			rules: compare.Rules{IgnorePaths: []string{"errors.*.extensions"}},
		},
		{
			name:  "* in brackets, and what it does not cover still counts",
			a:     answer(`{"errors":[{"message":"x","extensions":{"code":"A"}}]}`),
			b:     answer(`{"errors":[{"message":"z","extensions":{"code":"B"}}]}`),
			rules: compare.Rules{IgnorePaths: []string{"errors[*].extensions"}},
			want: []compare.Difference{{
				Kind: compare.KindBody, Path: "errors[0].message", A: `"x"`, B: `"z"`,
				Explanation: `legacy has "x" at errors[0].message; sockets has "z"`,
			}},
		},
		{
			name:  "* matches any member, a quoted member names one that is not an identifier",
			a:     answer(`{"data":{"a":{"ts":1},"b":{"ts":2},"x-y":1}}`),
			b:     answer(`{"data":{"a":{"ts":5},"b":{"ts":6},"x-y":2}}`),
			rules: compare.Rules{IgnorePaths: []string{"data.*.ts", `data["x-y"]`}},
		},
		{
			name:  "an index names one element",
			a:     answer(`{"list":[1,2,3]}`),
			b:     answer(`{"list":[9,2,4]}`),
			rules: compare.Rules{IgnorePaths: []string{"list.0"}},
			want: []compare.Difference{{
				Kind: compare.KindBody, Path: "list[1]", A: "3", B: "4",
				Explanation: "legacy has 3 at list[1]; sockets has 4",
			}},
		},
		{
			name:  "an object empty on both sides from the start still differs from none",
			a:     answer(`{"extensions":{}}`),
			b:     answer(`{}`),
			rules: compare.Rules{IgnorePaths: []string{"extensions.tracing"}},
			want: []compare.Difference{{
				Kind: compare.KindBody, Path: "extensions", A: "{}",
				Explanation: "legacy has {} at extensions; sockets has nothing there",
			}},
		},
		{
			name:   "a comparator for the schema decides",
			schema: "search",
			a:      answer(`{"hits":[1,2]}`),
			b:      answer(`{"hits":[2,1]}`),
			rules:  compare.Rules{Comparators: map[string]compare.Comparator{"search": always}},
		},
		{
			name:   "a comparator explains",
			schema: "search",
			a:      answer(`{"cursor":"a"}`),
			b:      answer(`{"cursor":"b"}`),
			rules:  compare.Rules{Comparators: map[string]compare.Comparator{"search": cursors}},
			want: []compare.Difference{{
				Kind: compare.KindBody, A: `"{\"cursor\":\"a\"}"`, B: `"{\"cursor\":\"b\"}"`,
				Explanation: "the cursors differ (legacy: 14 bytes, sockets: 14 bytes)",
			}},
		},
		{
			name:   "a comparator without an explanation",
			schema: "search",
			a:      answer(`1`),
			b:      answer(`2`),
			rules:  compare.Rules{Comparators: map[string]compare.Comparator{"search": silent}},
			want: []compare.Difference{{
				Kind: compare.KindBody, A: `"1"`, B: `"2"`,
				Explanation: `the comparator of source schema "search" found the bodies different (legacy: 1 bytes, sockets: 1 bytes)`,
			}},
		},
		{
			name:  "another schema's comparator does not apply",
			a:     answer(`{"n":1}`),
			b:     answer(`{"n":2}`),
			rules: compare.Rules{Comparators: map[string]compare.Comparator{"search": always}},
			want: []compare.Difference{{
				Kind: compare.KindBody, Path: "n", A: "1", B: "2", Explanation: "legacy has 1 at n; sockets has 2",
			}},
		},
		{
			name:  "ExactBytes sees key order",
			a:     answer(`{"a":1,"b":2}`),
			b:     answer(`{"b":2,"a":1}`),
			rules: compare.Rules{Comparators: map[string]compare.Comparator{"accounts": compare.ExactBytes}},
			want: []compare.Difference{{
				Kind: compare.KindBody, A: `"{\"a\":1,\"b\":2}"`, B: `"{\"b\":2,\"a\":1}"`,
				Explanation: "the bodies differ from byte 2 on (legacy: 13 bytes, sockets: 13 bytes)",
			}},
		},
		{
			name:  "timing over the ratio and the minimum",
			a:     timed(answer(`{}`), 20*time.Millisecond),
			b:     timed(answer(`{}`), 100*time.Millisecond),
			rules: compare.Rules{TimingRatio: 3, TimingMin: 50 * time.Millisecond},
			want: []compare.Difference{{
				Kind: compare.KindTiming, A: "20ms", B: "100ms",
				Explanation: "sockets took 100ms, 5.0 times the 20ms legacy took",
			}},
		},
		{
			name:  "timing: the slower side may be a",
			a:     timed(answer(`{}`), 2*time.Second),
			b:     timed(answer(`{}`), 400*time.Millisecond),
			rules: compare.Rules{TimingRatio: 2},
			want: []compare.Difference{{
				Kind: compare.KindTiming, A: "2s", B: "400ms",
				Explanation: "legacy took 2s, 5.0 times the 400ms sockets took",
			}},
		},
		{
			name:  "timing within the ratio",
			a:     timed(answer(`{}`), 20*time.Millisecond),
			b:     timed(answer(`{}`), 50*time.Millisecond),
			rules: compare.Rules{TimingRatio: 3},
		},
		{
			name:  "timing over the ratio but under the minimum",
			a:     timed(answer(`{}`), time.Millisecond),
			b:     timed(answer(`{}`), 9*time.Millisecond),
			rules: compare.Rules{TimingRatio: 3, TimingMin: 10 * time.Millisecond},
		},
		{
			name: "timing is off by default",
			a:    timed(answer(`{}`), time.Millisecond),
			b:    timed(answer(`{}`), time.Second),
		},
		{
			name:  "sensitive headers are compared, never published",
			a:     answer(`{}`, "Set-Cookie", "session=SECRET-A", "Authorization", "Bearer SECRET-A", "X-Api-Key", "SECRET-A", "X-Cache", "hit"),
			b:     answer(`{}`, "Set-Cookie", "session=SECRET-B", "X-Api-Key", "SECRET-B", "X-Cache", "hit"),
			rules: compare.Rules{Redact: []string{"x-api-key"}},
			want: []compare.Difference{
				{Kind: compare.KindHeader, Path: "Authorization", A: compare.Redacted, Explanation: `legacy has Authorization "[REDACTED]"; sockets has none`},
				{Kind: compare.KindHeader, Path: "Set-Cookie", A: compare.Redacted, B: compare.Redacted, Explanation: "legacy and sockets have different Set-Cookie values ([REDACTED])"},
				{Kind: compare.KindHeader, Path: "X-Api-Key", A: compare.Redacted, B: compare.Redacted, Explanation: "legacy and sockets have different X-Api-Key values ([REDACTED])"},
			},
		},
		{
			name: "equal sensitive headers make no difference",
			a:    answer(`{}`, "Set-Cookie", "session=SECRET"),
			b:    answer(`{}`, "Set-Cookie", "session=SECRET"),
		},
		{
			name:  "IgnoreHeaders",
			a:     answer(`{}`, "X-Request-Id", "1", "X-Served-By", "a"),
			b:     answer(`{}`, "X-Request-Id", "2", "X-Served-By", "b"),
			rules: compare.Rules{IgnoreHeaders: []string{"x-request-id", "X-SERVED-BY"}},
		},
		{
			name: "an error on one side",
			a:    compare.Outcome{Err: "dial tcp: connection refused"},
			b:    answer(`{}`),
			want: []compare.Difference{{
				Kind: compare.KindError, A: "dial tcp: connection refused",
				Explanation: "legacy failed: dial tcp: connection refused; sockets answered 200",
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			schema := tt.schema
			if schema == "" {
				schema = "accounts"
			}
			got := compare.Compare(schema, tt.a, tt.b, "legacy", "sockets", tt.rules)
			if diff := cmp.Diff(tt.want, got, diffOpts...); diff != "" {
				t.Errorf("Compare mismatch (-want +got):\n%s", diff)
			}
			for _, d := range got {
				if text := d.A + d.B + d.Explanation + d.Diff; strings.Contains(text, "SECRET") {
					t.Errorf("a secret is published: %+v", d)
				}
			}
		})
	}
}

// TestCompareDoesNotChangeItsInputs: the shadow mode hands Compare outcomes
// it may still log.
func TestCompareDoesNotChangeItsInputs(t *testing.T) {
	a := answer(`{"extensions":{"tracing":1},"data":{"x":1}}`, "Set-Cookie", "s=1")
	b := answer(`{"data":{"x":2}}`, "Set-Cookie", "s=2")
	rules := compare.Rules{IgnorePaths: []string{"extensions"}, IgnoreHeaders: []string{"X-A"}, Redact: []string{"X-B"}}
	compare.Compare("accounts", a, b, "legacy", "sockets", rules)
	if string(a.Body) != `{"extensions":{"tracing":1},"data":{"x":1}}` || a.Header.Get("Set-Cookie") != "s=1" {
		t.Errorf("Compare changed its input: %s %v", a.Body, a.Header)
	}
	if !cmp.Equal(rules.IgnoreHeaders, []string{"X-A"}) {
		t.Errorf("Compare changed the rules: %v", rules)
	}
}

func TestRulesValidate(t *testing.T) {
	valid := []string{"a", "$.a", "$a", "a.b.c", "errors.*.extensions", "errors[*].extensions", "a[0]", "a[12].b", `data["x-y"]`, `data["a.b"].c`, "*", "a.*"}
	for _, p := range valid {
		if err := (&compare.Rules{IgnorePaths: []string{p}}).Validate(); err != nil {
			t.Errorf("Validate(%q) = %v, want nil", p, err)
		}
	}
	tests := []struct {
		rules   compare.Rules
		wantErr string
	}{
		{compare.Rules{IgnorePaths: []string{""}}, `ignore path "": empty`},
		{compare.Rules{IgnorePaths: []string{"$"}}, `ignore path "$": empty`},
		{compare.Rules{IgnorePaths: []string{"a..b"}}, `ignore path "a..b": empty member after a dot`},
		{compare.Rules{IgnorePaths: []string{"a."}}, `ignore path "a.": empty member after a dot`},
		{compare.Rules{IgnorePaths: []string{".a"}}, `ignore path ".a": starts with a dot`},
		{compare.Rules{IgnorePaths: []string{"a[x]"}}, `ignore path "a[x]": [x]: want an index, * or a quoted member`},
		{compare.Rules{IgnorePaths: []string{"a[-1]"}}, `ignore path "a[-1]"`},
		{compare.Rules{IgnorePaths: []string{"a[0"}}, `ignore path "a[0": missing ]`},
		{compare.Rules{IgnorePaths: []string{`a["x`}}, `ignore path "a[\"x": unterminated quoted member`},
		{compare.Rules{IgnorePaths: []string{"a[0]b"}}, `ignore path "a[0]b": unexpected 'b' after "a[0]"`},
		{compare.Rules{IgnorePaths: []string{"a]"}}, `ignore path "a]": unexpected ']'`},
		{compare.Rules{TimingRatio: -1}, "timing ratio -1"},
		{compare.Rules{TimingRatio: 0.5}, "timing ratio 0.5: want more than 1"},
		{compare.Rules{TimingRatio: 2, TimingMin: -time.Second}, "timing minimum -1s: negative"},
	}
	for _, tt := range tests {
		err := tt.rules.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("Validate(%+v) = %v, want an error containing %q", tt.rules, err, tt.wantErr)
		}
	}
}

func FuzzIgnorePath(f *testing.F) {
	for _, s := range []string{"a.b", "errors[*].extensions", `x["y"]`, "a[0]", "$.a", "a..b", "[", `["`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		rules := compare.Rules{IgnorePaths: []string{p}}
		rules.Validate() // must not panic
		compare.Compare("s", answer(`{"a":{"b":[1,{"c":2}]},"x-y":[]}`), answer(`{"a":{"b":[1,{"c":3}]}}`), "legacy", "sockets", rules)
	})
}

func TestRedactHeader(t *testing.T) {
	h := http.Header{"Cookie": {"a=1", "b=2"}, "X-Token": {"t"}, "Accept": {"*/*"}}
	got := (&compare.Rules{Redact: []string{"x-token"}}).RedactHeader(h)
	want := http.Header{"Cookie": {compare.Redacted, compare.Redacted}, "X-Token": {compare.Redacted}, "Accept": {"*/*"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RedactHeader mismatch (-want +got):\n%s", diff)
	}
	if h.Get("Cookie") != "a=1" {
		t.Error("RedactHeader changed its input")
	}
	if (&compare.Rules{}).RedactHeader(nil) != nil {
		t.Error("RedactHeader(nil) is not nil")
	}
}

// closeCounter is a body that counts its Close calls.
type closeCounter struct {
	io.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

func TestCapture(t *testing.T) {
	body := &closeCounter{Reader: strings.NewReader(`{"data":{"long":"aaaa"}}`)}
	req, _ := http.NewRequest(http.MethodPost, "http://accounts.local/graphql", nil)
	resp := &http.Response{StatusCode: 201, Header: http.Header{"X-A": {"1"}}, Body: body, Request: req}
	got := compare.Capture(resp, nil, 5*time.Millisecond, 10)
	want := compare.Outcome{
		Status: 201, Header: http.Header{"X-A": {"1"}}, Body: []byte(`{"data":{"`), Truncated: true,
		URL: "http://accounts.local/graphql", FinalURL: "http://accounts.local/graphql",
	}
	if diff := cmp.Diff(want, got, cmpIgnoreElapsed); diff != "" {
		t.Errorf("Capture mismatch (-want +got):\n%s", diff)
	}
	if got.Elapsed < 5*time.Millisecond {
		t.Errorf("Elapsed = %v, want at least the 5ms passed in", got.Elapsed)
	}
	if body.closed != 1 {
		t.Errorf("body closed %d times, want 1", body.closed)
	}

	failed := &closeCounter{Reader: strings.NewReader("")}
	got = compare.Capture(&http.Response{StatusCode: 200, Body: failed}, errors.New("boom"), time.Millisecond, 0)
	if got.Err != "boom" || got.Status != 0 || failed.closed != 1 {
		t.Errorf("Capture of an error = %+v (body closed %d times), want Err boom, no status, body closed", got, failed.closed)
	}
	if got := compare.Capture(nil, nil, 0, 0); got.Err == "" {
		t.Error("Capture(nil, nil) has no error")
	}
}

var cmpIgnoreElapsed = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Elapsed" }, cmp.Ignore())
