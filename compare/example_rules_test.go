package compare_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fusiongo/transport"
	"github.com/fusiongo/transport/answer"
	"github.com/fusiongo/transport/compare"
	"github.com/fusiongo/transport/env"
)

// Compare classifies the differences between two answers to one request,
// as a shadow mode does for each request it samples.
func ExampleCompare() {
	legacy := &http.Response{
		StatusCode: 200,
		Header:     http.Header{"Set-Cookie": {"session=abc"}},
		Body:       io.NopCloser(strings.NewReader(`{"data":{"id":1},"extensions":{"tracing":{"ms":3}}}`)),
	}
	sockets := &http.Response{
		StatusCode: 200,
		Header:     http.Header{"Set-Cookie": {"session=xyz"}},
		Body:       io.NopCloser(strings.NewReader(`{"data":{"id":2}}`)),
	}
	a := compare.Capture(legacy, nil, 12*time.Millisecond, 1<<20)
	b := compare.Capture(sockets, nil, 15*time.Millisecond, 1<<20)

	rules := compare.Rules{IgnorePaths: []string{"extensions.tracing"}}
	for _, d := range compare.Compare("accounts", a, b, "legacy", "sockets", rules) {
		fmt.Printf("%s %s: %s\n", d.Kind, d.Path, d.Explanation)
	}
	// Output:
	// header Set-Cookie: legacy and sockets have different Set-Cookie values ([REDACTED])
	// body data.id: legacy has 1 at data.id; sockets has 2
}

// A Recorder samples a source schema's requests into a corpus for the
// compare command.
func ExampleRecorder() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"data":{"ok":true}}`)
	}))
	defer srv.Close()
	dir, err := os.MkdirTemp("", "corpus")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	rec, err := compare.NewRecorder(compare.RecorderOptions{
		Dir:          dir,
		Rate:         1, // in production, a small share such as 0.01
		MaxFileBytes: 64 << 20,
		MaxFiles:     10,
		HeaderNames:  []string{"X-Request-Id", "Authorization"}, // Authorization is written as [REDACTED]
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := env.Config{SourceSchemas: map[string]env.SourceSchema{"accounts": {URL: srv.URL}}}
	inv, err := transport.New(cfg, transport.WithSchemaOptions("accounts", transport.SchemaOptions{
		Middleware: []func(http.RoundTripper) http.RoundTripper{rec.Middleware("accounts")},
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer inv.Close()

	gw, _ := http.NewRequest(http.MethodPost, "http://gateway/graphql", nil)
	gw.Header.Set("Authorization", "Bearer secret")
	ctx := transport.WithGatewayRequest(gw.Context(), gw)
	if resp, err := inv.Post(ctx, "accounts", []byte(`{"query":"{ me { id } }"}`)); err == nil {
		resp.Body.Close()
	}
	if err := rec.Close(); err != nil { // flushes the last lines
		fmt.Println(err)
		return
	}

	f, _ := os.Open(filepath.Join(dir, "corpus-1.jsonl"))
	defer f.Close()
	corpus, err := compare.ReadCorpus(f)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rec.Recorded(), corpus[0].Schema, string(corpus[0].Body), corpus[0].Headers)
	// Output:
	// 1 accounts {"query":"{ me { id } }"} map[Authorization:[REDACTED]]
}

// ParseFailOn reads the thresholds that decide whether a report fails.
func ExampleParseFailOn() {
	failOn, err := compare.ParseFailOn("status>0,body>2%")
	if err != nil {
		fmt.Println(err)
		return
	}
	report := &compare.Report{A: "legacy", B: "sockets", Results: []compare.Result{
		{Name: "a", Differences: []answer.Difference{{Kind: answer.KindBody, Path: "data.x"}}},
		{Name: "b"},
	}}
	for _, b := range failOn.Check(report) {
		fmt.Println(b)
	}
	_, err = compare.ParseFailOn("body>two")
	fmt.Println(err)
	// Output:
	// body>2%: 1 of 2 requests (50%) has a body difference
	// invalid fail-on spec "body>two": threshold "body>two": "two" is not a number of requests (like 3) or a percentage (like 2.5%)
}
