package compare_test

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fusiongo/transport/answer"
	"github.com/fusiongo/transport/compare"
)

// sideSpec describes a clientInvoker for one side of a test.
type sideSpec struct {
	noFollow     bool              // return 3xx as is, like the sockets path
	noDecompress bool              // http.Transport.DisableCompression
	header       map[string]string // set on every request
	forward      []string          // gateway request headers forwarded
	fail         error             // every request fails with it
}

func (s sideSpec) invoker(t *testing.T, name string, urls map[string]string) *clientInvoker {
	t.Helper()
	tr := &http.Transport{DisableCompression: s.noDecompress}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr}
	if s.noFollow {
		c.CheckRedirect = noRedirects
	}
	h := make(http.Header)
	for k, v := range s.header {
		h.Set(k, v)
	}
	return &clientInvoker{name: name, client: c, urls: urls, forward: s.forward, header: h, fail: s.fail}
}

// bySide answers each side with its own JSON body.
func bySide(legacy, sockets string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("X-Side") == "legacy" {
			io.WriteString(w, legacy)
		} else {
			io.WriteString(w, sockets)
		}
	}
}

// gzipping answers body, gzip-compressed if the request accepts gzip.
func gzipping(legacy, sockets string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body := sockets
		if r.Header.Get("X-Side") == "legacy" {
			body = legacy
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Vary", "Accept-Encoding")
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			io.WriteString(w, body)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		io.WriteString(zw, body)
		zw.Close()
	}
}

// redirecting redirects /graphql to each side's target (empty: no
// redirect) and answers every other path with body.
func redirecting(code int, legacyTo, socketsTo, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		to := socketsTo
		if r.Header.Get("X-Side") == "legacy" {
			to = legacyTo
		}
		if r.URL.Path == "/graphql" && to != "" {
			http.Redirect(w, r, to, code)
			return
		}
		io.WriteString(w, body)
	}
}

const usersQuery = `{"query":"{ users { id name } }"}`

// expand fills the test server's URL into the wanted differences.
func expand(diffs []answer.Difference, srv string) []answer.Difference {
	out := make([]answer.Difference, len(diffs))
	for i, d := range diffs {
		r := strings.NewReplacer("$SRV", srv)
		d.A, d.B, d.Explanation = r.Replace(d.A), r.Replace(d.B), r.Replace(d.Explanation)
		out[i] = d
	}
	return out
}

// diffOpts compares Differences without cmp's own diff text, which go-cmp
// deliberately varies between runs; tests check it separately.
var diffOpts = []cmp.Option{cmpopts.IgnoreFields(answer.Difference{}, "Diff"), cmpopts.EquateEmpty()}

func TestRun(t *testing.T) {
	tests := []struct {
		name             string
		handler          http.HandlerFunc
		legacy, sockets  sideSpec
		corpus           []compare.Request // nil: one Post of usersQuery to "accounts"
		opts             compare.Options   // URLs is filled in
		want             []answer.Difference
		wantNotes        []string // substrings, one per note
		wantDiffContains []string // in the first difference's cmp.Diff text
	}{
		{
			name:    "identical JSON",
			handler: bySide(`{"data":{"users":[{"id":"1"}]}}`, `{"data":{"users":[{"id":"1"}]}}`),
		},
		{
			name:    "JSON keys in another order are identical",
			handler: bySide(`{"data":{"a":1,"b":[true,null]},"errors":[]}`, `{"errors":[],"data":{"b":[true,null],"a":1}}`),
		},
		{
			name: "one JSON field differs",
			handler: bySide(
				`{"data":{"users":[{"id":"1","name":"Bo"},{"id":"2","name":"Cy"},{"id":"3","name":"Ann"}]}}`,
				`{"data":{"users":[{"id":"1","name":"Bo"},{"id":"2","name":"Cy"},{"id":"3","name":"Anna"}]}}`),
			want: []answer.Difference{{
				Kind: answer.KindBody, Path: "data.users[2].name", A: `"Ann"`, B: `"Anna"`,
				Explanation: `legacy has "Ann" at data.users[2].name; sockets has "Anna"`,
			}},
			wantDiffContains: []string{`"Ann"`, `"Anna"`},
		},
		{
			name:    "numbers compare exactly, beyond float64",
			handler: bySide(`{"data":{"big":12345678901234567891}}`, `{"data":{"big":12345678901234567892}}`),
			want: []answer.Difference{{
				Kind: answer.KindBody, Path: "data.big", A: "12345678901234567891", B: "12345678901234567892",
				Explanation: "legacy has 12345678901234567891 at data.big; sockets has 12345678901234567892",
			}},
		},
		{
			name:    "members and elements missing on one side",
			handler: bySide(`{"data":{"ids":[1,2,3]},"extensions":{"cost":1}}`, `{"data":{"ids":[1,2],"x-y":true}}`),
			want: []answer.Difference{
				{Kind: answer.KindBody, Path: `data.ids[2]`, A: "3", Explanation: "legacy has 3 at data.ids[2]; sockets has nothing there"},
				{Kind: answer.KindBody, Path: `data["x-y"]`, B: "true", Explanation: `legacy has nothing at data["x-y"]; sockets has true`},
				{Kind: answer.KindBody, Path: "extensions", A: `{"cost":1}`, Explanation: `legacy has {"cost":1} at extensions; sockets has nothing there`},
			},
		},
		{
			name:    "paths beyond MaxPaths are counted",
			handler: bySide(`{"a":1,"b":1,"c":1,"d":1}`, `{"a":2,"b":2,"c":2,"d":2}`),
			opts:    compare.Options{MaxPaths: 2},
			want: []answer.Difference{
				{Kind: answer.KindBody, Path: "a", A: "1", B: "2", Explanation: "legacy has 1 at a; sockets has 2"},
				{Kind: answer.KindBody, Path: "b", A: "1", B: "2", Explanation: "legacy has 1 at b; sockets has 2"},
				{Kind: answer.KindBody, Explanation: "and 2 more JSON paths differ between legacy and sockets"},
			},
		},
		{
			name:    "different top-level types",
			handler: bySide(`{"data":null}`, `[{"data":null}]`),
			want: []answer.Difference{{
				Kind: answer.KindBody, Path: "$", A: `{"data":null}`, B: `[{"data":null}]`,
				Explanation: `legacy has {"data":null} as the whole body; sockets has [{"data":null}]`,
			}},
		},
		{
			name:    "bytes that are not JSON",
			handler: bySide("hello world", "hello there"),
			want: []answer.Difference{{
				Kind: answer.KindBody, A: `"hello world"`, B: `"hello there"`,
				Explanation: "the bodies differ from byte 6 on (legacy: 11 bytes, sockets: 11 bytes)",
			}},
		},
		{
			name:    "JSON against not JSON",
			handler: bySide(`{"data":{}}`, `<html>`),
			want: []answer.Difference{{
				Kind: answer.KindBody, A: `"{\"data\":{}}"`, B: `"<html>"`,
				Explanation: "the bodies differ from byte 0 on (legacy: 11 bytes, sockets: 6 bytes) and only the legacy body is JSON",
			}},
		},
		{
			name: "headers that differ only in Date are identical",
			handler: func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("X-Side") == "legacy" {
					w.Header().Set("Date", "Mon, 02 Jan 2006 15:04:05 GMT")
				} else {
					w.Header().Set("Date", "Tue, 03 Jan 2006 09:00:00 GMT")
				}
				io.WriteString(w, `{"data":{}}`)
			},
		},
		{
			name: "a header differs and one is missing",
			handler: func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("X-Side") == "legacy" {
					w.Header().Set("X-Cache", "hit")
					w.Header().Add("Set-Cookie", "a=1")
					w.Header().Add("Set-Cookie", "b=2")
				} else {
					w.Header().Set("X-Cache", "miss")
				}
				io.WriteString(w, `{"data":{}}`)
			},
			want: []answer.Difference{
				// Set-Cookie is sensitive: compared, but its values are never published.
				{Kind: answer.KindHeader, Path: "Set-Cookie", A: answer.Redacted, Explanation: `legacy has Set-Cookie "[REDACTED]"; sockets has none`},
				{Kind: answer.KindHeader, Path: "X-Cache", A: "hit", B: "miss", Explanation: `legacy has X-Cache "hit"; sockets has "miss"`},
			},
		},
		{
			name: "IgnoreHeaders",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Request-Id", r.Header.Get("X-Side"))
				io.WriteString(w, `{"data":{}}`)
			},
			opts: compare.Options{Rules: compare.Rules{IgnoreHeaders: []string{"x-request-id"}}},
		},
		{
			name: "status differs",
			handler: func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("X-Side") == "sockets" {
					w.WriteHeader(http.StatusBadGateway)
				}
				io.WriteString(w, `{"data":null}`)
			},
			want: []answer.Difference{{
				Kind: answer.KindStatus, A: "200", B: "502", Explanation: "legacy answered 200; sockets answered 502",
			}},
		},
		{
			name:    "legacy follows a redirect, sockets returns it",
			handler: redirecting(http.StatusFound, "/v2", "/v2", `{"data":{}}`),
			sockets: sideSpec{noFollow: true},
			want: []answer.Difference{{
				Kind: answer.KindRedirect, A: "$SRV/v2", B: "$SRV/graphql",
				Explanation: "legacy followed a 302 to /v2 and got a 200; sockets returned the 302",
			}},
		},
		{
			name:    "sockets follows a redirect, legacy returns it",
			handler: redirecting(http.StatusTemporaryRedirect, "/v2", "/v2", `{"data":{}}`),
			legacy:  sideSpec{noFollow: true},
			want: []answer.Difference{{
				Kind: answer.KindRedirect, A: "$SRV/graphql", B: "$SRV/v2",
				Explanation: "sockets followed a 307 to /v2 and got a 200; legacy returned the 307",
			}},
		},
		{
			name:    "both follow the same redirect",
			handler: redirecting(http.StatusFound, "/v2", "/v2", `{"data":{}}`),
		},
		{
			name:    "both follow redirects to different places",
			handler: redirecting(http.StatusFound, "/v2", "/v3", `{"data":{}}`),
			want: []answer.Difference{{
				Kind: answer.KindRedirect, A: "$SRV/v2", B: "$SRV/v3",
				Explanation: "legacy followed a 302 to /v2 and got a 200; sockets followed a 302 to /v3 and got a 200",
			}},
		},
		{
			name:    "gzip decompressed on one side, returned compressed on the other",
			handler: gzipping(`{"data":{"users":[]}}`, `{"data":{"users":[]}}`),
			sockets: sideSpec{noDecompress: true, header: map[string]string{"Accept-Encoding": "gzip"}},
			want: []answer.Difference{{
				Kind: answer.KindHeader, Path: "Content-Encoding", B: "gzip",
				Explanation: "legacy decompressed a gzip body transparently; sockets returned it compressed (Content-Encoding: gzip)",
			}},
		},
		{
			name:    "gzip compared after decoding",
			handler: gzipping(`{"data":{"n":1}}`, `{"data":{"n":2}}`),
			legacy:  sideSpec{noDecompress: true, header: map[string]string{"Accept-Encoding": "gzip"}},
			sockets: sideSpec{noDecompress: true, header: map[string]string{"Accept-Encoding": "gzip"}},
			want: []answer.Difference{{
				Kind: answer.KindBody, Path: "data.n", A: "1", B: "2", Explanation: "legacy has 1 at data.n; sockets has 2",
			}},
		},
		{
			name:    "decompressed on one side, never compressed on the other",
			handler: gzipping(`{"data":{}}`, `{"data":{}}`),
			sockets: sideSpec{noDecompress: true},
		},
		{
			name:    "one side fails",
			handler: bySide(`{"data":{}}`, `{"data":{}}`),
			sockets: sideSpec{fail: errors.New("dial tcp: connection refused")},
			want: []answer.Difference{{
				Kind: answer.KindError, B: `source schema "accounts": dial tcp: connection refused`,
				Explanation: `sockets failed: source schema "accounts": dial tcp: connection refused; legacy answered 200`,
			}},
		},
		{
			name:      "both sides fail",
			handler:   bySide(`{"data":{}}`, `{"data":{}}`),
			legacy:    sideSpec{fail: errors.New("pool closed")},
			sockets:   sideSpec{fail: errors.New("no route")},
			wantNotes: []string{`both sides failed, which counts as identical; legacy: source schema "accounts": pool closed; sockets: source schema "accounts": no route`},
		},
		{
			name: "timeout on one side",
			handler: func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("X-Side") == "sockets" {
					io.ReadAll(r.Body) // the server notices the client leaving only once the body is read
					select {
					case <-r.Context().Done():
					case <-time.After(10 * time.Second):
					}
				}
				io.WriteString(w, `{"data":{}}`)
			},
			opts: compare.Options{Timeout: 200 * time.Millisecond},
			want: []answer.Difference{{
				Kind: answer.KindError, B: `source schema "accounts": Post "$SRV/graphql": context deadline exceeded`,
				Explanation: `sockets failed: source schema "accounts": Post "$SRV/graphql": context deadline exceeded; legacy answered 200`,
			}},
		},
		{
			name:      "bodies cut at MaxBodyBytes",
			handler:   bySide(`{"data":{"long":"aaaaaaaa"}}`, `{"data":{"long":"aaaaaaaa"}}`),
			opts:      compare.Options{MaxBodyBytes: 10},
			wantNotes: []string{"the legacy body was cut at 10 bytes", "the sockets body was cut at 10 bytes"},
		},
		{
			name: "gateway headers forwarded by one side only",
			handler: func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprintf(w, `{"data":{"auth":%q}}`, r.Header.Get("Authorization"))
			},
			legacy: sideSpec{forward: []string{"Authorization"}},
			corpus: []compare.Request{{Name: "q", Schema: "accounts", Body: []byte(usersQuery), Headers: map[string]string{"authorization": "Bearer 1"}}},
			want: []answer.Difference{{
				Kind: answer.KindBody, Path: "data.auth", A: `"Bearer 1"`, B: `""`,
				Explanation: `legacy has "Bearer 1" at data.auth; sockets has ""`,
			}},
		},
		{
			name: "Do with a method and a relative path",
			handler: func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprintf(w, `{"method":%q,"uri":%q,"type":%q}`, r.Method, r.URL.RequestURI(), r.Header.Get("Content-Type"))
			},
			corpus: []compare.Request{
				{Name: "health", Schema: "accounts", Method: "GET", Path: "/health?deep=1"},
				{Name: "persisted", Schema: "accounts", Method: "PUT", Path: "persisted", Body: []byte(`{"id":"x"}`)},
			},
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			t.Cleanup(srv.Close)
			urls := map[string]string{"accounts": srv.URL + "/graphql"}
			opts := tt.opts
			opts.URLs = urls
			corpus := tt.corpus
			if corpus == nil {
				corpus = []compare.Request{{Name: "q", Schema: "accounts", Body: []byte(usersQuery)}}
			}

			report, err := compare.Run(context.Background(), corpus,
				compare.Side{Name: "legacy", Invoker: tt.legacy.invoker(t, "legacy", urls)},
				compare.Side{Name: "sockets", Invoker: tt.sockets.invoker(t, "sockets", urls)},
				opts)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if len(report.Results) != len(corpus) {
				t.Fatalf("got %d results, want %d", len(report.Results), len(corpus))
			}
			var got []answer.Difference
			var notes []string
			for _, res := range report.Results {
				got = append(got, res.Differences...)
				notes = append(notes, res.Notes...)
			}
			if diff := cmp.Diff(expand(tt.want, srv.URL), got, diffOpts...); diff != "" {
				t.Errorf("Differences mismatch (-want +got):\n%s", diff)
			}
			if report.Identical() != (len(tt.want) == 0) {
				t.Errorf("Identical() = %v with %d wanted differences", report.Identical(), len(tt.want))
			}
			if len(notes) != len(tt.wantNotes) {
				t.Errorf("notes = %q, want %d notes like %q", notes, len(tt.wantNotes), tt.wantNotes)
			} else {
				for i, want := range tt.wantNotes {
					if !strings.Contains(notes[i], want) {
						t.Errorf("note %d = %q, want it to contain %q", i, notes[i], want)
					}
				}
			}
			if len(tt.wantDiffContains) > 0 {
				text := got[0].Diff
				for _, want := range tt.wantDiffContains {
					if !strings.Contains(text, want) {
						t.Errorf("first difference's Diff does not contain %q:\n%s", want, text)
					}
				}
				for _, d := range got[1:] {
					if d.Diff != "" {
						t.Errorf("difference at %q also carries Diff text; only the first should", d.Path)
					}
				}
			}
		})
	}
}

// TestRunOutcomes checks what Run records of each side, beyond the
// differences.
func TestRunOutcomes(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %s %s %s %s", r.Header.Get("X-Side"), r.Method, r.URL.RequestURI(), r.Header.Get("Content-Type"), body))
		mu.Unlock()
		redirecting(http.StatusFound, "/v2", "/v2", `{"data":{}}`)(w, r)
	}))
	t.Cleanup(srv.Close)
	urls := map[string]string{"accounts": srv.URL + "/graphql"}
	corpus := []compare.Request{
		{Name: "post", Schema: "accounts", Body: []byte(`[{"query":"{ a }"},{"query":"{ b }"}]`)},
		{Name: "get", Schema: "accounts", Method: "GET", Path: srv.URL + "/health"},
	}
	report, err := compare.Run(context.Background(), corpus,
		compare.Side{Name: "legacy", Invoker: sideSpec{}.invoker(t, "legacy", urls)},
		compare.Side{Name: "sockets", Invoker: sideSpec{noFollow: true}.invoker(t, "sockets", urls)},
		compare.Options{URLs: urls})
	if err != nil {
		t.Fatal(err)
	}

	wantSeen := []string{
		`legacy POST /graphql application/json; charset=utf-8 [{"query":"{ a }"},{"query":"{ b }"}]`,
		`legacy GET /v2  `, // a 302 turns the POST into a GET without a body
		`sockets POST /graphql application/json; charset=utf-8 [{"query":"{ a }"},{"query":"{ b }"}]`,
		`legacy GET /health  `,
		`sockets GET /health  `,
	}
	if diff := cmp.Diff(wantSeen, seen); diff != "" {
		t.Errorf("requests on the wire mismatch (-want +got):\n%s", diff)
	}

	post := report.Results[0]
	if post.Name != "post" || post.Schema != "accounts" {
		t.Errorf("result 0 is %q/%q, want post/accounts", post.Name, post.Schema)
	}
	wantA := answer.Answer{
		Status: 200, Body: []byte(`{"data":{}}`),
		URL: srv.URL + "/graphql", FinalURL: srv.URL + "/v2",
		Redirects: []answer.Redirect{{Status: 302, Location: "/v2"}},
	}
	wantB := answer.Answer{
		Status: 302, URL: srv.URL + "/graphql", FinalURL: srv.URL + "/graphql",
	}
	ignoreHeaderAndBody := cmpopts.IgnoreFields(answer.Answer{}, "Header", "Body", "Elapsed")
	if diff := cmp.Diff(wantA, post.A, cmpopts.IgnoreFields(answer.Answer{}, "Header", "Elapsed"), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("legacy outcome mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantB, post.B, ignoreHeaderAndBody, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("sockets outcome mismatch (-want +got):\n%s", diff)
	}
	if post.A.Elapsed <= 0 || post.B.Elapsed <= 0 {
		t.Errorf("Elapsed = %v, %v; want both measured", post.A.Elapsed, post.B.Elapsed)
	}
	if got := post.B.Header.Get("Location"); got != "/v2" {
		t.Errorf("sockets Location = %q, want /v2", got)
	}
	if get := report.Results[1]; !get.Identical() || get.A.URL != srv.URL+"/health" {
		t.Errorf("get: identical %v, URL %q; want identical, %q", get.Identical(), get.A.URL, srv.URL+"/health")
	}
	if c := report.Counts(); c != (compare.Counts{Requests: 2, Identical: 1, Different: 1}) {
		t.Errorf("Counts() = %+v", c)
	}
}

// checkGoroutines fails the test if goroutines started during it are still
// running shortly after its cleanups. Register it first: cleanups run last
// first.
func checkGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<16)
				t.Errorf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

func TestRunConcurrentKeepsOrder(t *testing.T) {
	checkGoroutines(t)
	var mu sync.Mutex
	order := make(map[string][]string) // request name -> sides in arrival order
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("name")
		mu.Lock()
		order[name] = append(order[name], r.Header.Get("X-Side"))
		mu.Unlock()
		time.Sleep(time.Millisecond)
		fmt.Fprintf(w, `{"data":{"name":%q}}`, name)
	}))
	t.Cleanup(srv.Close)

	urls := map[string]string{"accounts": srv.URL + "/graphql"}
	var corpus []compare.Request
	for i := range 40 {
		name := fmt.Sprintf("r%02d", i)
		corpus = append(corpus, compare.Request{Name: name, Schema: "accounts", Method: "POST", Path: "?name=" + name, Body: []byte(usersQuery)})
	}
	report, err := compare.Run(context.Background(), corpus,
		compare.Side{Name: "legacy", Invoker: sideSpec{}.invoker(t, "legacy", urls)},
		compare.Side{Name: "sockets", Invoker: sideSpec{}.invoker(t, "sockets", urls)},
		compare.Options{URLs: urls, Concurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	for i, res := range report.Results {
		if res.Name != corpus[i].Name {
			t.Errorf("result %d is %q, want %q", i, res.Name, corpus[i].Name)
		}
		if !res.Identical() {
			t.Errorf("%s: %+v", res.Name, res.Differences)
		}
		if want := fmt.Sprintf(`{"data":{"name":%q}}`, res.Name); string(res.B.Body) != want {
			t.Errorf("%s: sockets body %s, want %s", res.Name, res.B.Body, want)
		}
		if got := order[res.Name]; !cmp.Equal(got, []string{"legacy", "sockets"}) {
			t.Errorf("%s: sides arrived as %q, want legacy then sockets", res.Name, got)
		}
	}
}

func TestRunStopsWithContext(t *testing.T) {
	checkGoroutines(t)
	ctx, cancel := context.WithCancel(context.Background())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cancel()
		io.WriteString(w, `{}`)
	}))
	t.Cleanup(srv.Close)
	urls := map[string]string{"accounts": srv.URL}
	corpus := []compare.Request{
		{Name: "a", Schema: "accounts", Body: []byte(`{}`)},
		{Name: "b", Schema: "accounts", Body: []byte(`{}`)},
	}
	report, err := compare.Run(ctx, corpus,
		compare.Side{Name: "legacy", Invoker: sideSpec{}.invoker(t, "legacy", urls)},
		compare.Side{Name: "sockets", Invoker: sideSpec{}.invoker(t, "sockets", urls)},
		compare.Options{})
	if !errors.Is(err, context.Canceled) || report != nil {
		t.Errorf("Run = %v, %v; want no report and context.Canceled", report, err)
	}
}
