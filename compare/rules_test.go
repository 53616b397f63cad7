package compare_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fusiongo/transport/answer"
	"github.com/fusiongo/transport/compare"
)

// jsonAnswer is a 200 answer with a JSON body and the given headers (name,
// value, name, value...).
func jsonAnswer(body string, header ...string) answer.Answer {
	h := http.Header{"Content-Type": {"application/json"}}
	for i := 0; i+1 < len(header); i += 2 {
		h.Add(header[i], header[i+1])
	}
	return answer.Answer{Status: 200, Header: h, Body: []byte(body)}
}

func timed(o answer.Answer, d time.Duration) answer.Answer {
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
		a, b   answer.Answer
		rules  compare.Rules
		want   []answer.Difference
	}{
		{
			name:  "ignore path on one side only, and the Content-Length it changes",
			a:     jsonAnswer(`{"data":{"id":1},"extensions":{"tracing":{"ms":3}}}`, "Content-Length", "51"),
			b:     jsonAnswer(`{"data":{"id":1}}`, "Content-Length", "17"),
			rules: compare.Rules{IgnorePaths: []string{"extensions.tracing"}},
		},
		{
			name:  "ignore path leaves the rest of a member",
			a:     jsonAnswer(`{"extensions":{"tracing":1,"cost":2}}`),
			b:     jsonAnswer(`{"extensions":{"cost":3}}`),
			rules: compare.Rules{IgnorePaths: []string{"$.extensions.tracing"}},
			want: []answer.Difference{{
				Kind: answer.KindBody, Path: "extensions.cost", A: "2", B: "3",
				Explanation: "legacy has 2 at extensions.cost; sockets has 3",
			}},
		},
		{
			name:  "* matches every index",
			a:     jsonAnswer(`{"errors":[{"message":"x","extensions":{"code":"A"}},{"message":"y","extensions":{"code":"B"}}]}`),
			b:     jsonAnswer(`{"errors":[{"message":"x"},{"message":"y","extensions":{"code":"C"}}]}`),
			rules: compare.Rules{IgnorePaths: []string{"errors.*.extensions"}},
		},
		{
			name:  "* in brackets, and what it does not cover still counts",
			a:     jsonAnswer(`{"errors":[{"message":"x","extensions":{"code":"A"}}]}`),
			b:     jsonAnswer(`{"errors":[{"message":"z","extensions":{"code":"B"}}]}`),
			rules: compare.Rules{IgnorePaths: []string{"errors[*].extensions"}},
			want: []answer.Difference{{
				Kind: answer.KindBody, Path: "errors[0].message", A: `"x"`, B: `"z"`,
				Explanation: `legacy has "x" at errors[0].message; sockets has "z"`,
			}},
		},
		{
			name:  "* matches any member, a quoted member names one that is not an identifier",
			a:     jsonAnswer(`{"data":{"a":{"ts":1},"b":{"ts":2},"x-y":1}}`),
			b:     jsonAnswer(`{"data":{"a":{"ts":5},"b":{"ts":6},"x-y":2}}`),
			rules: compare.Rules{IgnorePaths: []string{"data.*.ts", `data["x-y"]`}},
		},
		{
			name:  "an index names one element",
			a:     jsonAnswer(`{"list":[1,2,3]}`),
			b:     jsonAnswer(`{"list":[9,2,4]}`),
			rules: compare.Rules{IgnorePaths: []string{"list.0"}},
			want: []answer.Difference{{
				Kind: answer.KindBody, Path: "list[1]", A: "3", B: "4",
				Explanation: "legacy has 3 at list[1]; sockets has 4",
			}},
		},
		{
			name:  "an object empty on both sides from the start still differs from none",
			a:     jsonAnswer(`{"extensions":{}}`),
			b:     jsonAnswer(`{}`),
			rules: compare.Rules{IgnorePaths: []string{"extensions.tracing"}},
			want: []answer.Difference{{
				Kind: answer.KindBody, Path: "extensions", A: "{}",
				Explanation: "legacy has {} at extensions; sockets has nothing there",
			}},
		},
		{
			name:   "a comparator for the schema decides",
			schema: "search",
			a:      jsonAnswer(`{"hits":[1,2]}`),
			b:      jsonAnswer(`{"hits":[2,1]}`),
			rules:  compare.Rules{Comparators: map[string]compare.Comparator{"search": always}},
		},
		{
			name:   "a comparator explains",
			schema: "search",
			a:      jsonAnswer(`{"cursor":"a"}`),
			b:      jsonAnswer(`{"cursor":"b"}`),
			rules:  compare.Rules{Comparators: map[string]compare.Comparator{"search": cursors}},
			want: []answer.Difference{{
				Kind: answer.KindBody, A: `"{\"cursor\":\"a\"}"`, B: `"{\"cursor\":\"b\"}"`,
				Explanation: "the cursors differ (legacy: 14 bytes, sockets: 14 bytes)",
			}},
		},
		{
			name:   "a comparator without an explanation",
			schema: "search",
			a:      jsonAnswer(`1`),
			b:      jsonAnswer(`2`),
			rules:  compare.Rules{Comparators: map[string]compare.Comparator{"search": silent}},
			want: []answer.Difference{{
				Kind: answer.KindBody, A: `"1"`, B: `"2"`,
				Explanation: `the comparator of source schema "search" found the bodies different (legacy: 1 bytes, sockets: 1 bytes)`,
			}},
		},
		{
			name:  "another schema's comparator does not apply",
			a:     jsonAnswer(`{"n":1}`),
			b:     jsonAnswer(`{"n":2}`),
			rules: compare.Rules{Comparators: map[string]compare.Comparator{"search": always}},
			want: []answer.Difference{{
				Kind: answer.KindBody, Path: "n", A: "1", B: "2", Explanation: "legacy has 1 at n; sockets has 2",
			}},
		},
		{
			name:  "ExactBytes sees key order",
			a:     jsonAnswer(`{"a":1,"b":2}`),
			b:     jsonAnswer(`{"b":2,"a":1}`),
			rules: compare.Rules{Comparators: map[string]compare.Comparator{"accounts": compare.ExactBytes}},
			want: []answer.Difference{{
				Kind: answer.KindBody, A: `"{\"a\":1,\"b\":2}"`, B: `"{\"b\":2,\"a\":1}"`,
				Explanation: "the bodies differ from byte 2 on (legacy: 13 bytes, sockets: 13 bytes)",
			}},
		},
		{
			name:  "timing over the ratio and the minimum",
			a:     timed(jsonAnswer(`{}`), 20*time.Millisecond),
			b:     timed(jsonAnswer(`{}`), 100*time.Millisecond),
			rules: compare.Rules{TimingRatio: 3, TimingMin: 50 * time.Millisecond},
			want: []answer.Difference{{
				Kind: answer.KindTiming, A: "20ms", B: "100ms",
				Explanation: "sockets took 100ms, 5.0 times the 20ms legacy took",
			}},
		},
		{
			name:  "timing: the slower side may be a",
			a:     timed(jsonAnswer(`{}`), 2*time.Second),
			b:     timed(jsonAnswer(`{}`), 400*time.Millisecond),
			rules: compare.Rules{TimingRatio: 2},
			want: []answer.Difference{{
				Kind: answer.KindTiming, A: "2s", B: "400ms",
				Explanation: "legacy took 2s, 5.0 times the 400ms sockets took",
			}},
		},
		{
			name:  "timing within the ratio",
			a:     timed(jsonAnswer(`{}`), 20*time.Millisecond),
			b:     timed(jsonAnswer(`{}`), 50*time.Millisecond),
			rules: compare.Rules{TimingRatio: 3},
		},
		{
			name:  "timing over the ratio but under the minimum",
			a:     timed(jsonAnswer(`{}`), time.Millisecond),
			b:     timed(jsonAnswer(`{}`), 9*time.Millisecond),
			rules: compare.Rules{TimingRatio: 3, TimingMin: 10 * time.Millisecond},
		},
		{
			name: "timing is off by default",
			a:    timed(jsonAnswer(`{}`), time.Millisecond),
			b:    timed(jsonAnswer(`{}`), time.Second),
		},
		{
			name:  "sensitive headers are compared, never published",
			a:     jsonAnswer(`{}`, "Set-Cookie", "session=SECRET-A", "Authorization", "Bearer SECRET-A", "X-Api-Key", "SECRET-A", "X-Cache", "hit"),
			b:     jsonAnswer(`{}`, "Set-Cookie", "session=SECRET-B", "X-Api-Key", "SECRET-B", "X-Cache", "hit"),
			rules: compare.Rules{Redact: []string{"x-api-key"}},
			want: []answer.Difference{
				{Kind: answer.KindHeader, Path: "Authorization", A: answer.Redacted, Explanation: `legacy has Authorization "[REDACTED]"; sockets has none`},
				{Kind: answer.KindHeader, Path: "Set-Cookie", A: answer.Redacted, B: answer.Redacted, Explanation: "legacy and sockets have different Set-Cookie values ([REDACTED])"},
				{Kind: answer.KindHeader, Path: "X-Api-Key", A: answer.Redacted, B: answer.Redacted, Explanation: "legacy and sockets have different X-Api-Key values ([REDACTED])"},
			},
		},
		{
			name: "equal sensitive headers make no difference",
			a:    jsonAnswer(`{}`, "Set-Cookie", "session=SECRET"),
			b:    jsonAnswer(`{}`, "Set-Cookie", "session=SECRET"),
		},
		{
			name:  "IgnoreHeaders",
			a:     jsonAnswer(`{}`, "X-Request-Id", "1", "X-Served-By", "a"),
			b:     jsonAnswer(`{}`, "X-Request-Id", "2", "X-Served-By", "b"),
			rules: compare.Rules{IgnoreHeaders: []string{"x-request-id", "X-SERVED-BY"}},
		},
		{
			name: "an error on one side",
			a:    answer.Answer{Err: "dial tcp: connection refused"},
			b:    jsonAnswer(`{}`),
			want: []answer.Difference{{
				Kind: answer.KindError, A: "dial tcp: connection refused",
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
	a := jsonAnswer(`{"extensions":{"tracing":1},"data":{"x":1}}`, "Set-Cookie", "s=1")
	b := jsonAnswer(`{"data":{"x":2}}`, "Set-Cookie", "s=2")
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
		compare.Compare("s", jsonAnswer(`{"a":{"b":[1,{"c":2}]},"x-y":[]}`), jsonAnswer(`{"a":{"b":[1,{"c":3}]}}`), "legacy", "sockets", rules)
	})
}

func TestRedactHeader(t *testing.T) {
	h := http.Header{"Cookie": {"a=1", "b=2"}, "X-Token": {"t"}, "Accept": {"*/*"}}
	got := (&compare.Rules{Redact: []string{"x-token"}}).RedactHeader(h)
	want := http.Header{"Cookie": {answer.Redacted, answer.Redacted}, "X-Token": {answer.Redacted}, "Accept": {"*/*"}}
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
	want := answer.Answer{
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
