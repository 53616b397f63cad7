package answerdiff

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fusiongo/transport/answer"
)

func gz(s string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(s))
	zw.Close()
	return buf.Bytes()
}

// ok is a 200 JSON answer with body and the header pairs kv.
func ok(body string, kv ...string) answer.Answer {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return answer.Answer{Status: 200, Header: h, Body: []byte(body)}
}

// lines writes each difference as kind|path|a|b|explanation.
func lines(diffs []answer.Difference) []string {
	var out []string
	for _, d := range diffs {
		out = append(out, fmt.Sprintf("%s|%s|%s|%s|%s", d.Kind, d.Path, d.A, d.B, d.Explanation))
	}
	return out
}

func TestCompare(t *testing.T) {
	redirected := ok(`{}`)
	redirected.URL, redirected.FinalURL = "http://p.local/graphql", "http://p.local/v2"
	redirected.Redirects = []answer.Redirect{{Status: 307, Location: "/v2"}}
	redirect := answer.Answer{Status: 307, Header: http.Header{"Location": {"/v2"}}, URL: "http://p.local/graphql", FinalURL: "http://p.local/graphql"}
	twice := ok(`{}`)
	twice.URL, twice.FinalURL = "http://p.local/graphql", "http://p.local/v3?x=1"
	twice.Redirects = []answer.Redirect{{Status: 301, Location: "/v2"}, {Status: 308, Location: "/v3?x=1"}}
	unrecorded := ok(`{}`)
	unrecorded.URL, unrecorded.FinalURL = "http://p.local/graphql", "http://q.local/v2"
	elsewhereX, elsewhereY := ok(`{}`), ok(`{}`)
	elsewhereX.FinalURL, elsewhereY.FinalURL = "http://a/graphql", "http://b/graphql"
	uncompressed := ok(`{"a":1}`)
	uncompressed.Uncompressed = true
	compressed := answer.Answer{Status: 200, Header: http.Header{"Content-Encoding": {"gzip"}, "Content-Length": {"27"}}, Body: gz(`{"a":1}`)}
	brotli := answer.Answer{Status: 200, Header: http.Header{"Content-Encoding": {"br"}}, Body: []byte("\x1b\x02")}
	var many, manyOther []string
	for i := range MaxPaths + 2 {
		many = append(many, fmt.Sprintf(`"k%02d":1`, i))
		manyOther = append(manyOther, fmt.Sprintf(`"k%02d":2`, i))
	}

	for _, tc := range []struct {
		name  string
		x, y  answer.Answer
		want  []string
		notes int
	}{
		{"identical", ok(`{"a":1}`), ok(`{"a":1}`), nil, 0},
		{"both failed", answer.Answer{Err: "refused"}, answer.Answer{Err: "reset"}, nil, 0},
		{"one failed: nothing else", answer.Answer{Err: "refused"}, ok(`{}`, "X-A", "1"),
			[]string{"error||refused||x failed: refused; y answered 200"}, 0},
		{"the other failed", ok(`{}`), answer.Answer{Err: "reset"},
			[]string{"error|||reset|y failed: reset; x answered 200"}, 0},
		{"one followed a redirect: nothing else", redirected, redirect,
			[]string{"redirect||http://p.local/v2|http://p.local/graphql|x followed a 307 to /v2 and got a 200; y returned the 307"}, 0},
		{"both followed", twice, unrecorded,
			[]string{"redirect||http://p.local/v3?x=1|http://q.local/v2|x followed 2 redirects, the first a 301 to /v2, to /v3?x=1 and got a 200; y was redirected to http://q.local/v2 and got a 200"}, 0},
		{"followed without a chain; the other returned another redirect", unrecorded, answer.Answer{Status: 302, Header: http.Header{"Location": {"/v9"}}},
			[]string{"redirect||http://q.local/v2||x followed a 302 to /v9 and got a 200; y returned the 302"}, 0},
		{"followed; the other returned a different redirect", redirected, answer.Answer{Status: 302, Header: http.Header{"Location": {"/v9"}}},
			[]string{"redirect||http://p.local/v2||x followed a 307 to /v2 and got a 200; y returned a 302 to /v9"}, 0},
		{"followed; the other was not redirected", ok(`{}`), redirected,
			[]string{"redirect|||http://p.local/v2|y followed a 307 to /v2 and got a 200; x was not redirected and answered 200"}, 0},
		{"ended elsewhere", elsewhereX, elsewhereY,
			[]string{"redirect||http://a/graphql|http://b/graphql|x answered from http://a/graphql; y answered from http://b/graphql"}, 0},
		{"status, then header, then body", ok(`{"a":1}`, "X-A", "1"), answer.Answer{Status: 500, Header: http.Header{}, Body: []byte(`{"a":2}`)},
			[]string{
				"status||200|500|x answered 200; y answered 500",
				`header|X-A|1||x has X-A "1"; y has none`,
				"body|a|1|2|x has 1 at a; y has 2",
			}, 0},
		{"Date, hop-by-hop and Connection-named headers left out",
			ok(`{}`, "Date", "Mon", "Keep-Alive", "timeout=5", "Connection", "X-Conn", "X-Conn", "a", "Transfer-Encoding", "chunked"),
			ok(`{}`, "Date", "Tue", "X-Conn", "b", "Upgrade", "h2c"), nil, 0},
		{"headers by canonical name, sorted", ok(`{}`, "x-b", "1", "X-A", "1"), ok(`{}`, "X-B", "2", "X-A", "1", "x-c", "3"),
			[]string{`header|X-B|1|2|x has X-B "1"; y has "2"`, `header|X-C||3|x has no X-C; y has "3"`}, 0},
		{"sensitive values compared, not published", ok(`{}`, "Set-Cookie", "s=1", "Authorization", "a"), ok(`{}`, "Set-Cookie", "s=2"),
			[]string{"header|Authorization|[REDACTED]||x has Authorization \"[REDACTED]\"; y has none", "header|Set-Cookie|[REDACTED]|[REDACTED]|x and y have different Set-Cookie values ([REDACTED])"}, 0},
		{"Content-Length left out when the bodies differ", ok(`{"a":1}`, "Content-Length", "7"), ok(`{"a":22}`, "Content-Length", "8"),
			[]string{"body|a|1|22|x has 1 at a; y has 22"}, 0},
		{"Content-Length compared when the bodies are equal", ok(`{}`, "Content-Length", "2"), ok(`{}`, "Content-Length", "3"),
			[]string{`header|Content-Length|2|3|x has Content-Length "2"; y has "3"`}, 0},
		{"gzip decoded: the bodies are equal, the headers are not", ok(`{"a":1}`), compressed,
			[]string{`header|Content-Encoding||gzip|x has no Content-Encoding; y has "gzip"`, `header|Content-Length||27|x has no Content-Length; y has "27"`}, 0},
		{"transparent decompression: one Content-Encoding difference", uncompressed, compressed,
			[]string{"header|Content-Encoding||gzip|x decompressed a gzip body transparently; y returned it compressed (Content-Encoding: gzip)"}, 0},
		{"transparent decompression, swapped", compressed, uncompressed,
			[]string{"header|Content-Encoding|gzip||y decompressed a gzip body transparently; x returned it compressed (Content-Encoding: gzip)"}, 0},
		{"transparent decompression against an encoding it cannot decode", uncompressed, brotli,
			[]string{"header|Content-Encoding||br|x decompressed a body transparently; y returned it encoded (Content-Encoding: br), which compare cannot decode",
				`body||"{\"a\":1}"|"\x1b\x02"|the bodies differ from byte 0 on (x: 7 bytes, y: 2 bytes) and only the x body is JSON`}, 0},
		{"gzip that does not decode: compared as received, noted", ok(`x`, "Content-Encoding", "gzip"), ok(`x`, "Content-Encoding", "gzip"), nil, 2},
		{"JSON: key order and number text", ok(`{"a":1,"b":[true,null]}`), ok(` {"b":[true,null],"a":1} `), nil, 0},
		{"JSON: numbers by their text", ok(`{"a":1.0}`), ok(`{"a":1}`), []string{"body|a|1.0|1|x has 1.0 at a; y has 1"}, 0},
		{"JSON: members, indexes and the whole value", ok(`{"data":{"x-y":1,"l":[1]}}`), ok(`{"data":{"l":[1,2]},"e":"s"}`),
			[]string{
				`body|data.l[1]||2|x has nothing at data.l[1]; y has 2`,
				`body|data["x-y"]|1||x has 1 at data["x-y"]; y has nothing there`,
				`body|e||"s"|x has nothing at e; y has "s"`,
			}, 0},
		{"JSON: arrays shorter on either side, containers against scalars", ok(`[1,2,{"a":1}]`), ok(`[1,[2]]`),
			[]string{`body|[1]|2|[2]|x has 2 at [1]; y has [2]`, `body|[2]|{"a":1}||x has {"a":1} at [2]; y has nothing there`}, 0},
		{"JSON: long values cut to 120 runes", ok(`{"a":"` + strings.Repeat("é", 130) + `"}`), ok(`{"a":1}`),
			[]string{`body|a|"` + strings.Repeat("é", 118) + `…|1|x has "` + strings.Repeat("é", 118) + `… at a; y has 1`}, 0},
		{"JSON: whole value", ok(`[1]`), ok(`{"a":1}`), []string{`body|$|[1]|{"a":1}|x has [1] as the whole body; y has {"a":1}`}, 0},
		{"bytes: excerpt from before the first difference", ok(strings.Repeat("a", 40) + "X" + strings.Repeat("b", 60)), ok(strings.Repeat("a", 40) + "Y" + strings.Repeat("b", 60)),
			[]string{`body||…"aaaaaaaaaaaaaaaaXbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"…|…"aaaaaaaaaaaaaaaaYbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"…|the bodies differ from byte 40 on (x: 101 bytes, y: 101 bytes)`}, 0},
		{"bytes: only one is JSON", ok(`{}`), ok(`{} x`), []string{`body||"{}"|"{} x"|the bodies differ from byte 2 on (x: 2 bytes, y: 4 bytes) and only the x body is JSON`}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, notes := New(Options{A: "x", B: "y"}).Compare("products", &tc.x, &tc.y)
			if g := lines(got); !slices.Equal(g, tc.want) {
				t.Errorf("differences:\n%s\nwant:\n%s", strings.Join(g, "\n"), strings.Join(tc.want, "\n"))
			}
			if len(notes) != tc.notes {
				t.Errorf("notes %q, want %d", notes, tc.notes)
			}
		})
	}

	t.Run("JSON paths up to MaxPaths, then one that counts the rest", func(t *testing.T) {
		x, y := ok("{"+strings.Join(many, ",")+"}"), ok("{"+strings.Join(manyOther, ",")+"}")
		got, _ := New(Options{A: "x", B: "y"}).Compare("", &x, &y)
		if len(got) != MaxPaths+1 || got[0].Path != "k00" || got[MaxPaths-1].Path != "k19" {
			t.Fatalf("%d differences, want %d: %q", len(got), MaxPaths+1, lines(got))
		}
		if last := got[MaxPaths]; last.Path != "" || last.Explanation != "and 2 more JSON paths differ between x and y" {
			t.Errorf("last: %+v", last)
		}
		got, _ = New(Options{A: "x", B: "y", MaxPaths: 21}).Compare("", &x, &y)
		if last := got[len(got)-1]; len(got) != 22 || last.Explanation != "and 1 more JSON path differs between x and y" {
			t.Errorf("MaxPaths 21: %d, last %+v", len(got), last)
		}
	})
}

func TestOptions(t *testing.T) {
	x, y := ok(`{"a":1}`, "X-Request-Id", "1", "X-Key", "k1"), ok(`{"a":2}`, "X-Request-Id", "2", "X-Key", "k2")
	var schemas []string
	c := New(Options{
		A: "x", B: "y",
		Ignore: map[string]bool{"X-Request-Id": true},
		Redact: RedactSet([]string{"x-key"}),
		Body: func(schema string, xb, yb []byte) []answer.Difference {
			schemas = append(schemas, schema)
			return []answer.Difference{{Kind: answer.KindBody, A: string(xb), B: string(yb), Diff: "text"}}
		},
	})
	got, _ := c.Compare("products", &x, &y)
	want := []string{"header|X-Key|[REDACTED]|[REDACTED]|x and y have different X-Key values ([REDACTED])", `body||{"a":1}|{"a":2}|`}
	if g := lines(got); !slices.Equal(g, want) || got[1].Diff != "text" || !slices.Equal(schemas, []string{"products"}) {
		t.Errorf("got %q (Diff %q, schemas %q), want %q", g, got[len(got)-1].Diff, schemas, want)
	}

	// A gzip body is decoded up to MaxBodyBytes, noted when cut.
	gx, gy := ok(string(gz("abcdef")), "Content-Encoding", "gzip"), ok(string(gz("abcxyz")), "Content-Encoding", "gzip")
	got, notes := New(Options{A: "x", B: "y", MaxBodyBytes: 3}).Compare("", &gx, &gy)
	if len(got) != 0 || len(notes) != 2 || notes[0] != "the decoded x body was cut at 3 bytes (Options.MaxBodyBytes)" {
		t.Errorf("cut at 3: %q, notes %q", lines(got), notes)
	}
}

func TestRedactHeader(t *testing.T) {
	h := http.Header{"Cookie": {"a", "b"}, "x-key": {"k"}, "Accept": {"*/*"}}
	got := RedactHeader(h, RedactSet([]string{"X-Key"}))
	want := http.Header{"Cookie": {answer.Redacted, answer.Redacted}, "x-key": {answer.Redacted}, "Accept": {"*/*"}}
	if fmt.Sprint(got) != fmt.Sprint(want) || h["Cookie"][0] != "a" {
		t.Errorf("got %v, want %v (input %v)", got, want, h)
	}
	if RedactHeader(nil, RedactSet(nil)) != nil {
		t.Error("nil header: not nil")
	}
	for _, name := range []string{"Authorization", "Cookie", "Set-Cookie", "Proxy-Authorization"} {
		if !RedactSet(nil)[name] {
			t.Errorf("%s not redacted by default", name)
		}
	}
}

type body struct {
	io.Reader
	closed *bool
}

func (b body) Close() error { *b.closed = true; return nil }

func TestCapture(t *testing.T) {
	first, _ := url.Parse("http://u:secret@p.local/graphql")
	final, _ := url.Parse("http://p.local/v2")
	hop := &http.Response{StatusCode: 307, Header: http.Header{"Location": {"/v2"}}, Request: &http.Request{URL: first}}
	var closed bool
	resp := &http.Response{
		StatusCode: 200, Header: http.Header{"X-A": {"1"}}, Uncompressed: true,
		Body: body{strings.NewReader("abcdef"), &closed}, Request: &http.Request{URL: final, Response: hop},
	}
	a := Capture(resp, nil, time.Second, 4)
	if !closed || !a.Truncated || string(a.Body) != "abcd" || a.Status != 200 || a.Header.Get("X-A") != "1" || !a.Uncompressed || a.Elapsed < time.Second {
		t.Errorf("got %+v, closed %v", a, closed)
	}
	if a.URL != "http://u:xxxxx@p.local/graphql" || a.FinalURL != "http://p.local/v2" || !slices.Equal(a.Redirects, []answer.Redirect{{Status: 307, Location: "/v2"}}) {
		t.Errorf("URLs %q %q, redirects %v", a.URL, a.FinalURL, a.Redirects)
	}
	resp.Header.Set("X-A", "2")
	if a.Header.Get("X-A") != "1" {
		t.Error("the header is not a copy")
	}

	closed = false
	a = Capture(&http.Response{Body: body{strings.NewReader(""), &closed}}, errors.New("refused"), 0, 4)
	if a.Err != "refused" || a.Truncated || !closed {
		t.Errorf("error: %+v, closed %v", a, closed)
	}
	if a = Capture(nil, nil, 0, 4); a.Err == "" {
		t.Error("neither a response nor an error: no Err")
	}
}
