package compare_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fusiongo/transport"
	"github.com/fusiongo/transport/compare"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/gateway"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// sequence returns a Rand that yields values in turn, then 0.
func sequence(values ...float64) func() float64 {
	var mu sync.Mutex
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		if len(values) == 0 {
			return 0
		}
		v := values[0]
		values = values[1:]
		return v
	}
}

// newEchoServer starts a server that answers every request with its
// method, request URI and body size; Requests has what it received.
func newEchoServer(t *testing.T) *wiretest.Server {
	return wiretest.NewServer(t, wiretest.Options{Handler: func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"data":{"method":%q,"uri":%q,"size":%d}}`, r.Method, r.URL.RequestURI(), len(body))
	}})
}

// recordingClient is a client whose requests go through rec's middleware
// for schema.
func recordingClient(t *testing.T, rec *compare.Recorder, schema string) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: rec.Middleware(schema)(tr)}
}

// gatewayContext carries a gateway request with the given headers.
func gatewayContext(header map[string]string) context.Context {
	gw, _ := http.NewRequest(http.MethodPost, compare.GatewayURL, nil)
	for k, v := range header {
		gw.Header.Set(k, v)
	}
	return gateway.WithRequest(context.Background(), gw)
}

func post(t *testing.T, c *http.Client, ctx context.Context, url, body string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// readDir reads every corpus file in dir, in name order.
func readDir(t *testing.T, dir string) (files []string, corpus []compare.Request, raw string) {
	t.Helper()
	files, _ = filepath.Glob(filepath.Join(dir, "*.jsonl"))
	slices.Sort(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		raw += string(b)
		reqs, err := compare.ReadCorpus(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v\n%s", f, err, b)
		}
		corpus = append(corpus, reqs...)
	}
	return files, corpus, raw
}

func newRecorder(t *testing.T, opts compare.RecorderOptions) *compare.Recorder {
	t.Helper()
	rec, err := compare.NewRecorder(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	return rec
}

var entryName = regexp.MustCompile(`^accounts/[0-9]+-[0-9a-f]{8}$`)

func TestRecorderSamples(t *testing.T) {
	srv := newEchoServer(t)
	dir := t.TempDir()
	rec := newRecorder(t, compare.RecorderOptions{Dir: dir, Rate: 0.5, Rand: sequence(0.1, 0.6, 0.49, 0.5, 0.99, 0)})
	c := recordingClient(t, rec, "accounts")
	for i := range 6 {
		post(t, c, context.Background(), srv.URL+"/graphql", fmt.Sprintf(`{"query":"{ n%d }"}`, i))
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	if rec.Recorded() != 3 || rec.Skipped() != 0 {
		t.Errorf("Recorded() = %d, Skipped() = %d; want 3 and 0", rec.Recorded(), rec.Skipped())
	}
	files, corpus, _ := readDir(t, dir)
	if !cmp.Equal(files, []string{filepath.Join(dir, "corpus-1.jsonl")}) {
		t.Errorf("files = %q", files)
	}
	var bodies []string
	for _, r := range corpus {
		bodies = append(bodies, string(r.Body))
		if !entryName.MatchString(r.Name) || r.Schema != "accounts" || r.Method != "" || r.Path != "" || r.Headers != nil {
			t.Errorf("entry %+v: want a Post named accounts/<n>-<hash> without headers", r)
		}
	}
	want := []string{`{"query":"{ n0 }"}`, `{"query":"{ n2 }"}`, `{"query":"{ n5 }"}`}
	if diff := cmp.Diff(want, bodies); diff != "" {
		t.Errorf("recorded bodies mismatch (-want +got):\n%s", diff)
	}
	if len(srv.Requests()) != 6 {
		t.Errorf("the server got %d requests, want all 6", len(srv.Requests()))
	}
}

func TestRecorderHeaders(t *testing.T) {
	srv := newEchoServer(t)
	gw := map[string]string{
		"Authorization": "Bearer SECRET-1", "Cookie": "sid=SECRET-2", "X-Api-Key": "SECRET-3",
		"X-Request-Id": "req-7", "X-Other": "not listed",
	}
	tests := []struct {
		name string
		opts compare.RecorderOptions
		want map[string]string
	}{
		{name: "no header by default"},
		{
			name: "listed headers, the sensitive ones redacted",
			opts: compare.RecorderOptions{HeaderNames: []string{"authorization", "Cookie", "X-Api-Key", "X-Request-Id", "X-Absent"}, Redact: []string{"x-api-key"}},
			want: map[string]string{"Authorization": "[REDACTED]", "Cookie": "[REDACTED]", "X-Api-Key": "[REDACTED]", "X-Request-Id": "req-7"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := tt.opts
			opts.Dir, opts.Rate = dir, 1
			rec := newRecorder(t, opts)
			post(t, recordingClient(t, rec, "accounts"), gatewayContext(gw), srv.URL, `{"query":"{ me { id } }"}`)
			rec.Close()
			_, corpus, raw := readDir(t, dir)
			if len(corpus) != 1 {
				t.Fatalf("corpus = %+v, want 1 entry", corpus)
			}
			if diff := cmp.Diff(tt.want, corpus[0].Headers); diff != "" {
				t.Errorf("headers mismatch (-want +got):\n%s", diff)
			}
			if strings.Contains(raw, "SECRET") {
				t.Errorf("the corpus holds a secret:\n%s", raw)
			}
		})
	}
}

// onlyReader hides a body's other methods, so that a request has no
// GetBody and the Recorder must read the body itself.
type onlyReader struct{ io.Reader }

func TestRecorderBodies(t *testing.T) {
	srv := newEchoServer(t)
	big := `{"query":"{ ` + strings.Repeat("a ", 100) + `}"}`
	tests := []struct {
		name      string
		method    string
		path      string
		body      io.Reader
		record    bool
		wantEntry compare.Request // Name left out
	}{
		{name: "a Post", method: "POST", path: "/graphql", body: strings.NewReader(`{"query":"{ a }"}`), record: true,
			wantEntry: compare.Request{Schema: "accounts", Body: []byte(`{"query":"{ a }"}`)}},
		{name: "a batch without GetBody", method: "POST", path: "/graphql", body: onlyReader{strings.NewReader(` [{"query":"{ a }"},{"query":"{ b }"}] `)}, record: true,
			wantEntry: compare.Request{Schema: "accounts", Body: []byte(`[{"query":"{ a }"},{"query":"{ b }"}]`)}},
		{name: "a body over the cap, with GetBody", method: "POST", path: "/graphql", body: strings.NewReader(big)},
		{name: "a body over the cap, without GetBody", method: "POST", path: "/graphql", body: onlyReader{strings.NewReader(big)}},
		{name: "a GET keeps method and path", method: "GET", path: "/graphql?query=%7B+a+%7D", record: true,
			wantEntry: compare.Request{Schema: "accounts", Method: "GET", Path: "/graphql?query=%7B+a+%7D"}},
		{name: "a PUT of a query is a Do", method: "PUT", path: "/v2?x=1", body: strings.NewReader(`{"query":"query Q { a }","operationName":"Q"}`), record: true,
			wantEntry: compare.Request{Schema: "accounts", Method: "PUT", Path: "/v2?x=1", Body: []byte(`{"query":"query Q { a }","operationName":"Q"}`)}},
		{name: "a GET without a document", method: "GET", path: "/health", record: true,
			wantEntry: compare.Request{Schema: "accounts", Method: "GET", Path: "/health"}},
		{name: "a persisted query by hash cannot be told", method: "POST", path: "/graphql", body: strings.NewReader(`{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"abc"}}}`)},
		{name: "a JSON body that is no GraphQL request", method: "PUT", path: "/x", body: strings.NewReader(`{"id":"x"}`)},
		{name: "the named operation is a mutation", method: "POST", path: "/graphql", body: strings.NewReader(`{"query":"query A { a } mutation B { b }","operationName":"B"}`)},
		{name: "a body that is not JSON", method: "POST", path: "/graphql", body: strings.NewReader(`query=x`)},
		{name: "a JSON string is no corpus body", method: "POST", path: "/graphql", body: strings.NewReader(`"x"`)},
		{name: "a mutation", method: "POST", path: "/graphql", body: strings.NewReader(`{"query":"mutation { del }"}`)},
		{name: "a subscription in a batch", method: "POST", path: "/graphql", body: strings.NewReader(`[{"query":"{ a }"},{"query":"subscription S { s }"}]`)},
		{name: "a mutation in a GET", method: "GET", path: "/graphql?query=mutation%7Bx%7D"},
		// A GET with a query parameter is replayed only when that is a
		// query: one that cannot be told is skipped, as a body would be.
		{name: "a GET whose document does not parse", method: "GET", path: "/graphql?query=%7B+a"},
		{name: "a GET with an empty document", method: "GET", path: "/graphql?query="},
		{name: "a GET with a case variant of query holding a mutation", method: "GET", path: "/graphql?query=%7B+a+%7D&Query=mutation%7Bx%7D"},
		{name: "a GET with the query parameter twice", method: "GET", path: "/graphql?query=%7B+a+%7D&query=mutation%7Bx%7D"},
		{name: "a GET whose parameters a Go server does not parse", method: "GET", path: "/graphql?x=1;query=mutation%7Bx%7D"},
		{name: "a GET of a persisted query by hash has no document", method: "GET", path: "/graphql?extensions=%7B%7D", record: true,
			wantEntry: compare.Request{Schema: "accounts", Method: "GET", Path: "/graphql?extensions=%7B%7D"}},
		{name: "a case variant of query holding a mutation", method: "POST", path: "/graphql", body: strings.NewReader(`{"query":"query Q { a }","Query":"mutation M { pay(amount: 100) }"}`)},
		{name: "mutation as a word elsewhere is no mutation", method: "POST", path: "/graphql", record: true,
			body:      strings.NewReader(`{"query":"# mutation\nquery Q($mutation: Int) @mutation { a(x: \"mutation\", y: \"\"\"mutation\"\"\") { mutation } }"}`),
			wantEntry: compare.Request{Schema: "accounts", Body: []byte(`{"query":"# mutation\nquery Q($mutation: Int) @mutation { a(x: \"mutation\", y: \"\"\"mutation\"\"\") { mutation } }"}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			rec := newRecorder(t, compare.RecorderOptions{Dir: dir, Rate: 1, MaxBodyBytes: 150})
			var sent string
			body := tt.body
			if body != nil {
				b, _ := io.ReadAll(body)
				sent = string(b)
				if _, ok := tt.body.(onlyReader); ok {
					body = onlyReader{bytes.NewReader(b)}
				} else {
					body = bytes.NewReader(b)
				}
			}
			req, _ := http.NewRequest(tt.method, srv.URL+tt.path, body)
			resp, err := recordingClient(t, rec, "accounts").Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			rec.Close()

			if got := srv.Last(t).Body; got != sent {
				t.Errorf("the server got %q, want the whole body %q", got, sent)
			}
			_, corpus, _ := readDir(t, dir)
			if !tt.record {
				if len(corpus) != 0 || rec.Skipped() != 1 {
					t.Errorf("corpus = %+v, Skipped() = %d; want nothing recorded, 1 skipped", corpus, rec.Skipped())
				}
				return
			}
			if len(corpus) != 1 || rec.Recorded() != 1 {
				t.Fatalf("corpus = %+v, Recorded() = %d; want 1 entry", corpus, rec.Recorded())
			}
			got := corpus[0]
			got.Name = ""
			if diff := cmp.Diff(tt.wantEntry, got); diff != "" {
				t.Errorf("entry mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecorderRecordMutations(t *testing.T) {
	srv := newEchoServer(t)
	dir := t.TempDir()
	rec := newRecorder(t, compare.RecorderOptions{Dir: dir, Rate: 1, RecordMutations: true})
	post(t, recordingClient(t, rec, "accounts"), context.Background(), srv.URL, `{"query":"mutation { del }"}`)
	rec.Close()
	if _, corpus, _ := readDir(t, dir); len(corpus) != 1 {
		t.Errorf("corpus = %+v, want the mutation", corpus)
	}
}

func TestRecorderRotates(t *testing.T) {
	srv := newEchoServer(t)
	dir := t.TempDir()
	// A file from an earlier run stays, and numbering goes past it.
	os.WriteFile(filepath.Join(dir, "corpus-3.jsonl"), []byte(`{"name":"old/1","schema":"old","body":{}}`+"\n"), 0o600)
	rec := newRecorder(t, compare.RecorderOptions{Dir: dir, Rate: 1, MaxFileBytes: 200, MaxFiles: 2})
	c := recordingClient(t, rec, "accounts")
	for i := range 10 {
		post(t, c, context.Background(), srv.URL, fmt.Sprintf(`{"query":"{ field%02d }"}`, i)) // about 80 bytes a line: 2 a file
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	files, corpus, _ := readDir(t, dir)
	want := []string{"corpus-3.jsonl", "corpus-7.jsonl", "corpus-8.jsonl"}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
		if st, _ := os.Stat(f); st.Size() > 200 {
			t.Errorf("%s has %d bytes, over MaxFileBytes", f, st.Size())
		}
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("files mismatch (-want +got):\n%s", diff)
	}
	if rec.Recorded() != 10 {
		t.Errorf("Recorded() = %d, want 10", rec.Recorded())
	}
	// The old entry, then the last four of this run.
	var bodies []string
	for _, r := range corpus {
		bodies = append(bodies, string(r.Body))
	}
	wantBodies := []string{`{}`, `{"query":"{ field06 }"}`, `{"query":"{ field07 }"}`, `{"query":"{ field08 }"}`, `{"query":"{ field09 }"}`}
	if diff := cmp.Diff(wantBodies, bodies); diff != "" {
		t.Errorf("bodies mismatch (-want +got):\n%s", diff)
	}
}

func TestRecorderPath(t *testing.T) {
	srv := newEchoServer(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "rec.jsonl")
	os.WriteFile(path, []byte(`{"name":"old/1","schema":"old","body":{}}`+"\n"), 0o600)
	rec := newRecorder(t, compare.RecorderOptions{Path: path, Rate: 1, MaxFileBytes: 100, MaxFiles: 2})
	c := recordingClient(t, rec, "accounts")
	for i := range 3 {
		post(t, c, context.Background(), srv.URL, fmt.Sprintf(`{"query":"{ field%02d }"}`, i))
	}
	rec.Close()
	files, corpus, _ := readDir(t, dir)
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	// rec.jsonl would go over the cap with one more line, so each line
	// goes into a file of its own: rec-2, rec-3, rec-4. MaxFiles keeps the
	// last two the Recorder created; rec.jsonl was there before and stays.
	if want := []string{"rec-3.jsonl", "rec-4.jsonl", "rec.jsonl"}; !cmp.Equal(want, names) {
		t.Errorf("files = %q, want %q", names, want)
	}
	var bodies []string
	for _, r := range corpus {
		bodies = append(bodies, string(r.Body))
	}
	if want := []string{`{"query":"{ field01 }"}`, `{"query":"{ field02 }"}`, `{}`}; !cmp.Equal(want, bodies) {
		t.Errorf("bodies = %q, want %q", bodies, want)
	}
}

func TestRecorderConcurrent(t *testing.T) {
	checkGoroutines(t)
	srv := newEchoServer(t)
	dir := t.TempDir()
	rec := newRecorder(t, compare.RecorderOptions{Dir: dir, Rate: 1, MaxFileBytes: 1000})
	c := recordingClient(t, rec, "accounts")
	var wg sync.WaitGroup
	for range 40 {
		wg.Go(func() { post(t, c, context.Background(), srv.URL, `{"query":"{ same }"}`) }) // equal bodies: the names still differ
	}
	wg.Wait()
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	_, corpus, _ := readDir(t, dir)
	seen := make(map[string]bool)
	for _, r := range corpus {
		if seen[r.Name] {
			t.Errorf("name %q twice", r.Name)
		}
		seen[r.Name] = true
	}
	if len(corpus) != 40 || rec.Recorded() != 40 {
		t.Errorf("corpus has %d entries, Recorded() = %d; want 40", len(corpus), rec.Recorded())
	}
}

func TestRecorderAfterClose(t *testing.T) {
	srv := newEchoServer(t)
	dir := t.TempDir()
	rec := newRecorder(t, compare.RecorderOptions{Dir: dir, Rate: 1})
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	post(t, recordingClient(t, rec, "accounts"), context.Background(), srv.URL, `{"query":"{ a }"}`)
	if rec.Recorded() != 0 || rec.Skipped() != 0 || len(srv.Requests()) != 1 {
		t.Errorf("after Close: Recorded %d, Skipped %d, sent %d; want the request sent, not recorded", rec.Recorded(), rec.Skipped(), len(srv.Requests()))
	}
	if err := rec.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestNewRecorderRejects(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		opts    compare.RecorderOptions
		wantErr string
	}{
		{compare.RecorderOptions{Rate: 1}, "set exactly one of Dir and Path"},
		{compare.RecorderOptions{Dir: dir, Path: dir + "/x.jsonl", Rate: 1}, "set exactly one of Dir and Path"},
		{compare.RecorderOptions{Dir: dir}, "Rate 0: want more than 0 and at most 1"},
		{compare.RecorderOptions{Dir: dir, Rate: 1.5}, "Rate 1.5"},
		{compare.RecorderOptions{Dir: dir, Rate: 1, MaxBodyBytes: -1}, "MaxBodyBytes -1: negative"},
		{compare.RecorderOptions{Dir: dir, Rate: 1, MaxFileBytes: -1}, "MaxFileBytes -1: negative"},
		{compare.RecorderOptions{Dir: dir, Rate: 1, MaxFiles: -1}, "MaxFiles -1: negative"},
		{compare.RecorderOptions{Path: filepath.Join(dir, "file", "x.jsonl"), Rate: 1}, "compare: recorder:"},
	}
	os.WriteFile(filepath.Join(dir, "file"), nil, 0o600) // a file where a directory should be
	for _, tt := range tests {
		rec, err := compare.NewRecorder(tt.opts)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("NewRecorder(%+v) = %v, want an error containing %q", tt.opts, err, tt.wantErr)
		}
		if rec != nil {
			rec.Close()
		}
	}
}

// TestRecorderReplay records through the real legacy path, then replays the
// corpus through both paths to a clean report: what the Recorder writes is
// what the harness needs.
func TestRecorderReplay(t *testing.T) {
	checkGoroutines(t)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /graphql", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"data":{"echo":%q,"request":%q}}`, body, r.Header.Get("X-Request-Id"))
	})
	mux.HandleFunc("POST /old", func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		http.Redirect(w, r, "/graphql", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	cfg := env.Config{ForwardHeaders: []string{"X-Request-Id", "Authorization"}, SourceSchemas: map[string]env.SourceSchema{
		"accounts": {URL: srv.URL + "/graphql"},
		"reviews":  {URL: srv.URL + "/old"},
	}}
	dir := t.TempDir()
	rec := newRecorder(t, compare.RecorderOptions{Dir: dir, Rate: 1, HeaderNames: []string{"X-Request-Id", "Authorization"}})
	noProxy := func(string) (string, bool) { return "", false }
	inv, err := transport.New(cfg, transport.WithLookupEnv(noProxy),
		transport.WithSchemaOptions("accounts", transport.SchemaOptions{Middleware: []func(http.RoundTripper) http.RoundTripper{rec.Middleware("accounts")}}),
		transport.WithSchemaOptions("reviews", transport.SchemaOptions{Middleware: []func(http.RoundTripper) http.RoundTripper{rec.Middleware("reviews")}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inv.Close() })

	ctx := gatewayContext(map[string]string{"X-Request-Id": "r-1", "Authorization": "Bearer SECRET"})
	for i := range 3 {
		resp, err := inv.Post(ctx, "accounts", fmt.Appendf(nil, `{"query":"{ user(id: %d) { id } }"}`, i))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	health, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/health", nil)
	resp, err := inv.Do(ctx, "accounts", health)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The legacy path follows this redirect inside its client: one entry,
	// not one per hop.
	resp, err = inv.Post(ctx, "reviews", []byte(`{"query":"{ top }"}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}

	_, corpus, raw := readDir(t, dir)
	if len(corpus) != 5 || rec.Recorded() != 5 {
		t.Fatalf("corpus has %d entries (Recorded %d), want 5:\n%s", len(corpus), rec.Recorded(), raw)
	}
	if strings.Contains(raw, "SECRET") {
		t.Errorf("the corpus holds a secret:\n%s", raw)
	}

	// Replay the accounts requests through both paths.
	var accounts []compare.Request
	for _, r := range corpus {
		if r.Schema == "accounts" {
			accounts = append(accounts, r)
		}
	}
	legacy, sockets := bothPaths(t, cfg)
	report, err := compare.Run(context.Background(), accounts,
		compare.Side{Name: "legacy", Invoker: legacy}, compare.Side{Name: "sockets", Invoker: sockets},
		compare.Options{URLs: map[string]string{"accounts": srv.URL + "/graphql"}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	report.Write(&out)
	if !report.Identical() || len(report.Results) != 4 {
		t.Errorf("the replay is not clean:\n%s", out.String())
	}
	if got := string(report.Results[0].A.Body); !strings.Contains(got, `"request":"r-1"`) {
		t.Errorf("the recorded gateway header did not reach the source schema on replay: %s", got)
	}
}

// TestRecorderWriteError: a full disk does not fail the requests, and Close
// reports it.
func TestRecorderWriteError(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	srv := newEchoServer(t)
	rec, err := compare.NewRecorder(compare.RecorderOptions{Path: "/dev/full", Rate: 1})
	if err != nil {
		t.Fatal(err)
	}
	c := recordingClient(t, rec, "accounts")
	post(t, c, context.Background(), srv.URL, `{"query":"{ a }"}`) // buffered: no error yet
	if err := rec.Flush(); err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Errorf("Flush = %v, want no space left", err)
	}
	post(t, c, context.Background(), srv.URL, `{"query":"{ b }"}`)
	if err := rec.Close(); err == nil || !strings.Contains(err.Error(), "compare: recorder:") {
		t.Errorf("Close = %v, want the write error", err)
	}
	if rec.Skipped() != 1 || len(srv.Requests()) != 2 {
		t.Errorf("Skipped() = %d, requests sent %d; want 1 skipped after the error, both sent", rec.Skipped(), len(srv.Requests()))
	}
}
