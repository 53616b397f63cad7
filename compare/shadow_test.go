package compare_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/fusiongo/transport/answer"
	"github.com/fusiongo/transport/compare"
	"github.com/fusiongo/transport/shadow"
)

// shadowSide is a Sender that gives one shadowSide response, or fails.
type shadowSide struct {
	status       int
	header       http.Header
	body         []byte
	uncompressed bool
	err          error
	redirect     *http.Response // the redirect followed before, if any
}

func (a shadowSide) Post(_ context.Context, _ string, _ []byte) (*http.Response, error) {
	if a.err != nil {
		return nil, a.err
	}
	u, _ := url.Parse("http://products.local/graphql")
	req := &http.Request{Method: http.MethodPost, URL: u}
	if a.redirect != nil {
		u2, _ := url.Parse("http://products.local/v2")
		req = &http.Request{Method: http.MethodPost, URL: u2, Response: a.redirect}
	}
	h := a.header.Clone()
	if h == nil {
		h = http.Header{}
	}
	return &http.Response{StatusCode: a.status, Header: h, Body: ioNopCloser(a.body), Uncompressed: a.uncompressed, Request: req}, nil
}

func (a shadowSide) Do(ctx context.Context, schema string, _ *http.Request) (*http.Response, error) {
	return a.Post(ctx, schema, nil)
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

func ioNopCloser(b []byte) nopCloser { return nopCloser{bytes.NewReader(b)} }

// published keeps what a Shadow publishes.
type published struct {
	mu    sync.Mutex
	diffs [][]answer.Difference
}

func (p *published) Publish(_ context.Context, m shadow.Mismatch) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.diffs = append(p.diffs, m.Differences)
}
func (p *published) Compared(context.Context, string, bool)  {}
func (p *published) Dropped(context.Context, string, string) {}

// shadowed runs one query through a Shadow of primary and candidate with
// comparer c and returns the differences published, each as one line.
func shadowed(t *testing.T, primary, candidate shadowSide, c shadow.Comparer) (lines []string, diffTexts int) {
	t.Helper()
	pub := &published{}
	s := shadow.New(primary, candidate, shadow.Options{Rate: 1, Comparer: c, Publisher: pub})
	resp, err := s.Post(context.Background(), "products", []byte(`{"query":"{ price }"}`))
	if err == nil {
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		resp.Body.Close()
	}
	s.Close()
	pub.mu.Lock()
	defer pub.mu.Unlock()
	for _, ds := range pub.diffs {
		for _, d := range ds {
			lines = append(lines, fmt.Sprintf("%s|%s|%s|%s|%s", d.Kind, d.Path, d.A, d.B, d.Explanation))
			if d.Diff != "" {
				diffTexts++
			}
		}
	}
	return lines, diffTexts
}

func gz(s string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(s))
	zw.Close()
	return buf.Bytes()
}

// TestShadowDefaultMatchesZeroRules: the default shadow.Comparer, which
// links no go-cmp, publishes the same differences as
// ShadowComparer(Rules{}), but for the go-cmp text (Difference.Diff).
func TestShadowDefaultMatchesZeroRules(t *testing.T) {
	json := http.Header{"Content-Type": {"application/json"}}
	many := func(v int) []byte {
		var b strings.Builder
		b.WriteString(`{"data":{`)
		for i := range 25 {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"f%02d":%d`, i, v)
		}
		b.WriteString("}}")
		return []byte(b.String())
	}
	redirect := &http.Response{StatusCode: 307, Header: http.Header{"Location": {"/v2"}}, Request: &http.Request{URL: &url.URL{Scheme: "http", Host: "products.local", Path: "/graphql"}}}
	for _, c := range []struct {
		name       string
		a, b       shadowSide
		wantDiffs  int // how many differences
		wantKindAt string
	}{
		{name: "equal, keys reordered", a: shadowSide{status: 200, header: json, body: []byte(`{"data":{"a":1,"b":2}}`)}, b: shadowSide{status: 200, header: json, body: []byte(`{"data":{"b":2,"a":1}}`)}},
		{name: "a JSON member", a: shadowSide{status: 200, body: []byte(`{"data":{"price":899}}`)}, b: shadowSide{status: 200, body: []byte(`{"data":{"price":900}}`)}, wantDiffs: 1, wantKindAt: "body|data.price"},
		{name: "numbers by text", a: shadowSide{status: 200, body: []byte(`{"n":1.0}`)}, b: shadowSide{status: 200, body: []byte(`{"n":1}`)}, wantDiffs: 1, wantKindAt: "body|n"},
		{name: "many paths", a: shadowSide{status: 200, body: many(1)}, b: shadowSide{status: 200, body: many(2)}, wantDiffs: 21, wantKindAt: "body|data.f00"},
		{name: "status, headers, Date and Connection options left out", a: shadowSide{status: 200, header: http.Header{"Date": {"x"}, "Connection": {"X-Conn"}, "X-Conn": {"1"}, "Authorization": {"Bearer secret-a"}, "X-Only-A": {"1"}}, body: []byte(`{}`)}, b: shadowSide{status: 503, header: http.Header{"Date": {"y"}, "Authorization": {"Bearer secret-b"}, "Cookie": {"c=1"}}, body: []byte(`{}`)}, wantDiffs: 4, wantKindAt: "status|"},
		{name: "Content-Length only with the bodies", a: shadowSide{status: 200, header: http.Header{"Content-Length": {"2"}}, body: []byte(`ab`)}, b: shadowSide{status: 200, header: http.Header{"Content-Length": {"3"}}, body: []byte(`abc`)}, wantDiffs: 1, wantKindAt: "body|"},
		{name: "gzip left encoded against transparent", a: shadowSide{status: 200, header: http.Header{"Content-Encoding": {"gzip"}}, body: gz(`{"x":1}`)}, b: shadowSide{status: 200, uncompressed: true, body: []byte(`{"x":1}`)}, wantDiffs: 1, wantKindAt: "header|Content-Encoding"},
		{name: "bytes", a: shadowSide{status: 200, body: []byte(`plain text a`)}, b: shadowSide{status: 200, body: []byte(`{"x":1}`)}, wantDiffs: 1, wantKindAt: "body|"},
		{name: "one side fails", a: shadowSide{status: 200, body: []byte(`{}`)}, b: shadowSide{err: errors.New("dial tcp: refused")}, wantDiffs: 1, wantKindAt: "error|"},
		{name: "both fail", a: shadowSide{err: errors.New("a")}, b: shadowSide{err: errors.New("b")}},
		{name: "a redirect on one side", a: shadowSide{status: 200, body: []byte(`{}`), redirect: redirect}, b: shadowSide{status: 307, header: http.Header{"Location": {"/v2"}}}, wantDiffs: 1, wantKindAt: "redirect|"},
	} {
		t.Run(c.name, func(t *testing.T) {
			def, defTexts := shadowed(t, c.a, c.b, nil)
			rules, _ := shadowed(t, c.a, c.b, compare.ShadowComparer(compare.Rules{}))
			if strings.Join(def, "\n") != strings.Join(rules, "\n") {
				t.Errorf("default comparer:\n%s\ncompare.ShadowComparer(Rules{}):\n%s", strings.Join(def, "\n"), strings.Join(rules, "\n"))
			}
			if defTexts != 0 {
				t.Errorf("the default comparer wrote %d text diffs, want none", defTexts)
			}
			if len(def) != c.wantDiffs {
				t.Fatalf("%d differences, want %d:\n%s", len(def), c.wantDiffs, strings.Join(def, "\n"))
			}
			if c.wantDiffs > 0 && !strings.HasPrefix(def[0], c.wantKindAt+"|") {
				t.Errorf("first difference %q, want %s", def[0], c.wantKindAt)
			}
			for _, l := range def {
				if strings.Contains(l, "secret") || strings.Contains(l, "c=1") {
					t.Errorf("a sensitive header's value is published: %s", l)
				}
			}
		})
	}
}
