package middleware_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/fusiongo/transport/internal/testsupport/apqserve"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
	"github.com/fusiongo/transport/middleware"
)

// longQuery is a query text longer than the persistedQuery extension, so
// that it goes by its hash.
const longQuery = `query Reviews($upc: String!) { product(upc: $upc) { upc name price weight inStock shippingEstimate reviews { id body author { id username name } } } }`

// hashOf is the hex SHA-256 of a query text, as a server computes it.
func hashOf(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// pq is the persistedQuery extension object of text.
func pq(text string) string {
	return `{"persistedQuery":{"version":1,"sha256Hash":"` + hashOf(text) + `"}}`
}

// apqSchema is a source schema on loopback that serves persisted queries
// (apqserve) in front of an inner handler that answers each request with
// the body it got, as data: so a test sees both what crossed the wire and
// what the schema ran.
type apqSchema struct {
	*httptest.Server
	apq *apqserve.Handler

	mu   sync.Mutex
	seen []wireReq // guarded by mu: every request, as it arrived
}

// wireReq is one request as it arrived.
type wireReq struct {
	method, query, body string
}

func newAPQSchema(t *testing.T, mode apqserve.Mode) *apqSchema {
	t.Helper()
	s := &apqSchema{}
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got := string(body)
		if r.Method == http.MethodGet {
			got = r.URL.RawQuery
		}
		if !strings.Contains(got, "query") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"errors":[{"message":"the request has no query"}]}`)
			return
		}
		b, _ := json.Marshal(map[string]any{"data": map[string]string{"ran": got}})
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	})
	s.apq = apqserve.New(inner, apqserve.Options{Mode: mode})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.seen = append(s.seen, wireReq{r.Method, r.URL.RawQuery, string(body)})
		s.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.apq.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// take returns the requests seen since the last take.
func (s *apqSchema) take() []wireReq {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.seen
	s.seen = nil
	return out
}

// call sends body through rt to s and returns the answer's status and
// body.
func (s *apqSchema) call(t *testing.T, rt http.RoundTripper, body string) (int, string) {
	t.Helper()
	resp, err := rt.RoundTrip(newRequest(t, context.Background(), s.URL, body, true))
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	return resp.StatusCode, readBody(t, resp)
}

// ran is the answer of the inner handler that ran body.
func ran(body string) string {
	b, _ := json.Marshal(map[string]any{"data": map[string]string{"ran": body}})
	return string(b)
}

// TestPersistedQueriesBodies: for each shape of request object, the first
// call sends the hash alone where the query stood (or inside the request's
// own extensions), the schema answers PersistedQueryNotFound, the same
// request goes again with text and hash, and the schema runs the request
// as written; the next call goes by the hash alone, and runs it too.
func TestPersistedQueriesBodies(t *testing.T) {
	q, _ := json.Marshal(longQuery)
	vars := `{"upc":"1","n":[1,2.50,{"a":"\u00e9"}]}`
	tests := []struct {
		name, body       string
		hashOnly, rehash string // what the schema gets: by hash, then with text and hash
	}{
		{
			name:     "query first",
			body:     `{"query":` + string(q) + `,"variables":` + vars + `}`,
			hashOnly: `{"extensions":` + pq(longQuery) + `,"variables":` + vars + `}`,
			rehash:   `{"query":` + string(q) + `,"extensions":` + pq(longQuery) + `,"variables":` + vars + `}`,
		},
		{
			name:     "query last, operationName",
			body:     `{"operationName":"Reviews","variables":` + vars + `,"query":` + string(q) + `}`,
			hashOnly: `{"operationName":"Reviews","variables":` + vars + `,"extensions":` + pq(longQuery) + `}`,
			rehash:   `{"operationName":"Reviews","variables":` + vars + `,"query":` + string(q) + `,"extensions":` + pq(longQuery) + `}`,
		},
		{
			name:     "extensions of its own, after the query",
			body:     `{"query":` + string(q) + `, "extensions":{"trace":true}}`,
			hashOnly: `{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"` + hashOf(longQuery) + `"},"trace":true}}`,
			rehash:   `{"query":` + string(q) + `, "extensions":{"persistedQuery":{"version":1,"sha256Hash":"` + hashOf(longQuery) + `"},"trace":true}}`,
		},
		{
			name:     "empty extensions before the query",
			body:     `{"extensions":{} , "query":` + string(q) + `}`,
			hashOnly: `{"extensions":` + pq(longQuery) + ` }`,
			rehash:   `{"extensions":` + pq(longQuery) + ` , "query":` + string(q) + `}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newAPQSchema(t, apqserve.On)
			var resent []string
			p := middleware.NewPersistedQueries(middleware.PersistedQueriesConfig{
				OnResend: func(_ context.Context, reason string) { resent = append(resent, reason) },
			})
			rt := middleware.Chain(s.Client().Transport, p.Middleware())
			for i := range 2 {
				status, answer := s.call(t, rt, tt.body)
				if status != http.StatusOK || !strings.Contains(answer, `"ran"`) {
					t.Fatalf("call %d: %d %s", i, status, answer)
				}
			}
			want := []wireReq{{"POST", "", tt.hashOnly}, {"POST", "", tt.rehash}, {"POST", "", tt.hashOnly}}
			if got := s.take(); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("the schema got\n%q\nwant\n%q", got, want)
			}
			if fmt.Sprint(resent) != "[not_found]" || !p.On() {
				t.Errorf("resent %v, on %t: want [not_found], on", resent, p.On())
			}
		})
	}
}

// TestPersistedQueriesLeftAlone: requests that persisted queries leave
// alone reach the schema byte for byte as sent.
func TestPersistedQueriesLeftAlone(t *testing.T) {
	q, _ := json.Marshal(longQuery)
	for name, body := range map[string]string{
		"short query":           `{"query":"{ users { id name } }"}`,
		"a batch":               `[{"query":` + string(q) + `}]`,
		"another member":        `{"query":` + string(q) + `,"id":"x"}`,
		"persisted already":     `{"query":` + string(q) + `,"extensions":` + pq(longQuery) + `}`,
		"a case variant":        `{"query":` + string(q) + `,"Query":"{ a }"}`,
		"query twice":           `{"query":` + string(q) + `,"query":` + string(q) + `}`,
		"broken frame":          `{"query":` + string(q) + ` "variables":{}}`,
		"query no JSON string":  `{"query":"` + strings.Repeat("x", 150) + `\q"}`,
		"truncated":             `{"query":` + string(q) + `,"variables":{"a":`,
		"extensions not object": `{"query":` + string(q) + `,"extensions":null}`,
	} {
		t.Run(name, func(t *testing.T) {
			s := newAPQSchema(t, apqserve.On)
			rt := middleware.Chain(s.Client().Transport, middleware.NewPersistedQueries(middleware.PersistedQueriesConfig{}).Middleware())
			s.call(t, rt, body)
			if got := s.take(); len(got) != 1 || got[0].body != body {
				t.Errorf("the schema got %q, want the body as sent: %s", got, body)
			}
		})
	}
}

// TestPersistedQueriesRefusals: what a request by its hash gets decides
// whether it goes again, how, and whether persisted queries stay on. A
// mutation is sent again only after an answer that says it did not run.
func TestPersistedQueriesRefusals(t *testing.T) {
	q, _ := json.Marshal(longQuery)
	query := `{"query":` + string(q) + `}`
	mutation := `{"query":"mutation { addReview(upc: \"1\", body: \"` + strings.Repeat("great ", 20) + `\") { id } }"}`
	mq := mutation[len(`{"query":`) : len(mutation)-1]
	hashOnly := func(text json.RawMessage) string {
		var s string
		json.Unmarshal(text, &s)
		return `{"extensions":` + pq(s) + `}`
	}
	tests := []struct {
		name    string
		body    string
		answers []string // the schema's answers, status then body, in turn
		want    []string // the bodies the schema got
		resent  string
		off     string
	}{
		{"not found by code", query, []string{"200", `{"errors":[{"message":"x","extensions":{"code":"PERSISTED_QUERY_NOT_FOUND"}}],"data":null}`, "200", `{"data":{}}`},
			[]string{hashOnly(q), `{"query":` + string(q) + `,"extensions":` + pq(longQuery) + `}`}, "[not_found]", ""},
		{"not found by message, 400", query, []string{"400", `{"errors":[{"message":"PersistedQueryNotFound"}]}`, "200", `{"data":{}}`},
			[]string{hashOnly(q), `{"query":` + string(q) + `,"extensions":` + pq(longQuery) + `}`}, "[not_found]", ""},
		{"not supported", query, []string{"200", `{"errors":[{"message":"PersistedQueryNotSupported","extensions":{"code":"PERSISTED_QUERY_NOT_SUPPORTED"}}]}`, "200", `{"data":{}}`},
			[]string{hashOnly(q), query}, "[not_supported]", "not_supported"},
		{"no APQ: request error, then the text runs", query, []string{"400", `{"errors":[{"message":"the request has no query"}]}`, "200", `{"data":{}}`},
			[]string{hashOnly(q), query}, "[request_error]", "no_apq"},
		{"request error both ways: APQ stays on", query, []string{"400", `{"errors":[{"message":"Cannot query field"}]}`, "400", `{"errors":[{"message":"Cannot query field"}]}`},
			[]string{hashOnly(q), query}, "[request_error]", ""},
		{"a field error at a path is an answer", query, []string{"200", `{"errors":[{"message":"boom","path":["product"]}],"data":null}`},
			[]string{hashOnly(q)}, "[]", ""},
		{"not found with data is an answer", query, []string{"200", `{"errors":[{"message":"PersistedQueryNotFound"}],"data":{"a":1}}`},
			[]string{hashOnly(q)}, "[]", ""},
		{"a 503 is the retry's", query, []string{"503", `{"errors":[{"message":"PersistedQueryNotFound"}]}`},
			[]string{hashOnly(q)}, "[]", ""},
		{"mutation not found", mutation, []string{"200", `{"errors":[{"message":"PersistedQueryNotFound"}],"data":null}`, "200", `{"data":{}}`},
			[]string{hashOnly(json.RawMessage(mq)), mutation[:len(mutation)-1] + `,"extensions":` + pqOf(mq) + `}`}, "[not_found]", ""},
		{"mutation ran and failed at its field: sent once", mutation, []string{"200", `{"errors":[{"message":"out of stock","path":["addReview"]}],"data":null}`},
			[]string{hashOnly(json.RawMessage(mq))}, "[]", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			rt := roundTripFunc(func(req *http.Request) (*http.Response, error) {
				b, _ := io.ReadAll(req.Body)
				got = append(got, string(b))
				i := 2 * (len(got) - 1)
				if i >= len(tt.answers) {
					t.Fatalf("request %d: the schema has no answer for %s", len(got), b)
				}
				var status int
				fmt.Sscan(tt.answers[i], &status)
				resp, _ := fakeResponse(req, status, tt.answers[i+1])
				return resp, nil
			})
			var resent []string
			p := middleware.NewPersistedQueries(middleware.PersistedQueriesConfig{
				Logger:   slog.New(slog.DiscardHandler),
				OnResend: func(_ context.Context, reason string) { resent = append(resent, reason) },
			})
			resp, err := p.Middleware()(rt).RoundTrip(newRequest(t, context.Background(), "http://schema.test/graphql", tt.body, true))
			if err != nil {
				t.Fatal(err)
			}
			last := tt.answers[len(tt.answers)-1]
			if answer := readBody(t, resp); answer != last {
				t.Errorf("the caller got %s, want the last answer %s", answer, last)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("the schema got\n%q\nwant\n%q", got, tt.want)
			}
			if fmt.Sprint(resent) != tt.resent || p.Off() != tt.off {
				t.Errorf("resent %v, off %q; want %s, %q", resent, p.Off(), tt.resent, tt.off)
			}
		})
	}
}

// pqOf is pq of a query text written as a JSON string.
func pqOf(quoted string) string {
	var s string
	json.Unmarshal([]byte(quoted), &s)
	return pq(s)
}

// TestPersistedQueriesOffOnce: a schema that answers
// PersistedQueryNotSupported turns persisted queries off once, said in one
// log line however many callers learn it at once, and every later request
// goes with its text alone.
func TestPersistedQueriesOffOnce(t *testing.T) {
	s := newAPQSchema(t, apqserve.NotSupported)
	var log wiretest.LogBuffer
	p := middleware.NewPersistedQueries(middleware.PersistedQueriesConfig{Schema: "products", Logger: slog.New(slog.NewTextHandler(&log, nil))})
	rt := middleware.Chain(s.Client().Transport, p.Middleware())
	q, _ := json.Marshal(longQuery)
	body := `{"query":` + string(q) + `}`
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			resp, err := rt.RoundTrip(newRequest(t, context.Background(), s.URL, body, true))
			if err != nil {
				t.Error(err)
				return
			}
			if got := readBody(t, resp); got != ran(body) {
				t.Errorf("answer %s, want %s", got, ran(body))
			}
		})
	}
	wg.Wait()
	s.take()
	s.call(t, rt, body)
	if got := s.take(); len(got) != 1 || got[0].body != body {
		t.Errorf("after the refusal the schema got %q, want the text alone", got)
	}
	if n := strings.Count(log.String(), "automatic persisted queries off"); n != 1 || !strings.Contains(log.String(), "source_schema=products") {
		t.Errorf("%d log lines say persisted queries are off, want 1 naming the schema:\n%s", n, log.String())
	}
}

// TestPersistedQueriesHashOnce: a text is hashed once, however many calls
// send it; the hashes kept stay within their bound as new texts come, and
// a text in use stays kept.
func TestPersistedQueriesHashOnce(t *testing.T) {
	s := newAPQSchema(t, apqserve.On)
	hashes := middleware.NewQueryHashes(64 << 10)
	rt := middleware.Chain(s.Client().Transport, middleware.NewPersistedQueries(middleware.PersistedQueriesConfig{Hashes: hashes}).Middleware())
	q, _ := json.Marshal(longQuery)
	body := `{"query":` + string(q) + `,"variables":{"upc":"1"}}`
	for range 20 {
		s.call(t, rt, body)
	}
	if n := middleware.HashesComputed(hashes); n != 1 {
		t.Errorf("20 calls with one text computed %d hashes, want 1", n)
	}
	// 2,000 other texts of about 300 bytes, each sent once, between calls
	// of the first: about 600 KiB of texts through a 64 KiB bound.
	for i := range 2000 {
		text := fmt.Sprintf("query Q%d { product(upc: \"%d\") { %s } }", i, i, strings.Repeat("name ", 50))
		b, _ := json.Marshal(map[string]string{"query": text})
		s.call(t, rt, string(b))
		if i%50 == 0 {
			s.call(t, rt, body)
		}
		if _, kept := middleware.HashesKept(hashes); kept > 64<<10 {
			t.Fatalf("after %d texts the hashes keep %d bytes, over the bound of %d", i+1, kept, 64<<10)
		}
	}
	if n := middleware.HashesComputed(hashes); n != 2001 {
		t.Errorf("2,001 texts computed %d hashes, want 2,001: the text in use was dropped and hashed again", n)
	}
	if texts, kept := middleware.HashesKept(hashes); kept < 31<<10 {
		t.Errorf("the hashes keep %d texts of %d bytes, want at least half the bound's worth", texts, kept)
	}
}

// TestPersistedQueriesInsideStages: every attempt of a query by its hash
// carries its hash, a retry's included, and the stages further in see it
// as the query it is: Retry retries it, Compress compresses its hash form
// (and Retry further in still retries the compressed one).
func TestPersistedQueriesInsideStages(t *testing.T) {
	q, _ := json.Marshal(longQuery)
	body := `{"query":` + string(q) + `,"variables":{"pad":"` + strings.Repeat("x", 2000) + `"}}`
	hashOnly := `{"extensions":` + pq(longQuery) + `,"variables":{"pad":"` + strings.Repeat("x", 2000) + `"}}`
	retry := middleware.Retry(middleware.RetryConfig{MaxAttempts: 3, WaitMin: 1, WaitMax: 1})
	for name, mws := range map[string][]middleware.Middleware{
		"retry":               {retry},
		"compress then retry": {middleware.Compress(middleware.CompressConfig{Codec: middleware.CodecGzip}), retry},
	} {
		t.Run(name, func(t *testing.T) {
			var got []string
			rt := roundTripFunc(func(req *http.Request) (*http.Response, error) {
				b, _ := io.ReadAll(req.Body)
				got = append(got, decode(t, req.Header.Get("Content-Encoding"), b))
				status := http.StatusServiceUnavailable
				if len(got) == 3 {
					status = http.StatusOK
				}
				resp, _ := fakeResponse(req, status, `{"data":{"ok":true}}`)
				return resp, nil
			})
			p := middleware.NewPersistedQueries(middleware.PersistedQueriesConfig{})
			resp, err := middleware.Chain(rt, append([]middleware.Middleware{p.Middleware()}, mws...)...).RoundTrip(newRequest(t, context.Background(), "http://schema.test/graphql", body, true))
			if err != nil {
				t.Fatal(err)
			}
			readBody(t, resp)
			if len(got) != 3 {
				t.Fatalf("the schema got %d attempts, want 3 (two 503s retried)", len(got))
			}
			for i, b := range got {
				if b != hashOnly {
					t.Errorf("attempt %d carried %.120s..., want the hash form", i+1, b)
				}
			}
		})
	}
}

// TestPersistedQueriesGET: with GET, a query whose URL stays within the
// bound goes as a GET with operationName, variables and extensions in its
// query string; a longer one, and a mutation, by POST; a GET whose hash
// the schema does not know goes again by POST with text and hash.
func TestPersistedQueriesGET(t *testing.T) {
	s := newAPQSchema(t, apqserve.On)
	p := middleware.NewPersistedQueries(middleware.PersistedQueriesConfig{GET: true, MaxURLBytes: 1024})
	rt := middleware.Chain(s.Client().Transport, p.Middleware())
	q, _ := json.Marshal(longQuery)
	vars := `{"upc":"1 & 2"}`
	body := `{"query":` + string(q) + `,"operationName":"Reviews","variables":` + vars + `}`
	get := "operationName=Reviews&variables=" + url.QueryEscape(vars) + "&extensions=" + url.QueryEscape(pq(longQuery))
	for range 2 {
		s.call(t, rt, body)
	}
	want := []wireReq{
		{"GET", get, ""},
		{"POST", "", `{"query":` + string(q) + `,"extensions":` + pq(longQuery) + `,"operationName":"Reviews","variables":` + vars + `}`},
		{"GET", get, ""},
	}
	if got := s.take(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the schema got\n%q\nwant\n%q", got, want)
	}
	long := `{"query":` + string(q) + `,"variables":{"pad":"` + strings.Repeat("y", 1000) + `"}}`
	mutation := `{"query":"mutation { addReview(upc: \"1\", body: \"` + strings.Repeat("great ", 20) + `\") { id } }"}`
	for _, b := range []string{long, mutation} {
		s.call(t, rt, b)
		if got := s.take(); len(got) == 0 || got[0].method != http.MethodPost {
			t.Errorf("the schema got %q for %.60s..., want a POST", got, b)
		}
	}
}
