package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/cmd/fusion-transport/internal/corpus"
	"github.com/fusiongo/transport/cmd/fusion-transport/internal/load"
	"github.com/fusiongo/transport/cmd/fusion-transport/internal/schemas"
	"github.com/fusiongo/transport/compare"
	"github.com/fusiongo/transport/env"
)

// startCommand runs the command args in process until the test ends and
// returns the lines it printed on stdout before its first n lines were
// read, and its stderr.
func startCommand(t *testing.T, n int, args ...string) ([]string, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	outR, outW := io.Pipe()
	errOut := &syncBuffer{}
	exited := make(chan int, 1)
	go func() {
		exited <- run(ctx, args, outW, errOut)
		outW.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-exited; code != 0 {
			t.Errorf("%s: exit %d\n%s", strings.Join(args, " "), code, errOut.String())
		}
	})
	sc := bufio.NewScanner(outR)
	var lines []string
	for len(lines) < n && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) < n {
		t.Fatalf("%s: %d lines on stdout, want %d\n%s", strings.Join(args, " "), len(lines), n, errOut.String())
	}
	go io.Copy(io.Discard, outR)
	return lines, errOut
}

// TestSchemasCacheControl: schemas -cache-control puts the value on every
// answer, replayed or not, and each schema counts its requests at
// schemas.CallsPath.
func TestSchemasCacheControl(t *testing.T) {
	for _, replayed := range []bool{false, true} {
		args := []string{"schemas", "-cache-control", "public, max-age=60"}
		if replayed {
			args = append(args, "-replay", "-learn")
		}
		t.Run(strings.Join(args[1:], " "), func(t *testing.T) {
			lines, _ := startCommand(t, len(schemas.Names), args...)
			urls := map[string]string{}
			for _, l := range lines {
				name, u, _ := strings.Cut(l, " ")
				urls[name] = u
			}
			for range 2 {
				resp, err := http.Post(urls["accounts"], "application/json", strings.NewReader(`{"query":"{ users { id } }"}`))
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if got := resp.Header.Get("Cache-Control"); resp.StatusCode != http.StatusOK || got != "public, max-age=60" {
					t.Errorf("%d, Cache-Control %q; want 200 and public, max-age=60", resp.StatusCode, got)
				}
			}
			n, err := schemas.Calls(context.Background(), http.DefaultClient, []string{urls["accounts"], urls["products"]})
			if n != 2 || err != nil {
				t.Errorf("calls %d, %v; want 2", n, err)
			}
		})
	}
}

// TestGatewayCache: with -cache the gateway's transport answers from its
// response cache what the source schemas marked public, whoever asks:
// over schemas that answer "public, max-age=60", the first request's six
// calls reach them and no later one's, for another user too (Authorization
// forwarded); without -cache every request's calls do. The answers are the
// same; the startup line says the cache is on. On both paths.
func TestGatewayCache(t *testing.T) {
	srv, err := schemas.Start(schemas.Options{CacheControl: "public, max-age=60"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var list, urls []string
	for _, name := range schemas.Names {
		list = append(list, name+"="+srv.URLs[name])
		urls = append(urls, srv.URLs[name])
	}
	t.Setenv("FUSION_FORWARD_HEADERS", "Authorization")
	var want []byte // the answer, the same for every request
	for _, path := range []string{"0", "1"} {
		for _, cache := range []bool{false, true} {
			args := []string{"gateway", "-schemas", strings.Join(list, ",")}
			wantCalls := int64(18)
			if cache {
				args = append(args, "-cache")
				wantCalls = 6
			}
			t.Run(fmt.Sprintf("FUSION_SOCKETS_TRANSPORT=%s/cache=%v", path, cache), func(t *testing.T) {
				t.Setenv("FUSION_SOCKETS_TRANSPORT", path)
				before, err := schemas.Calls(context.Background(), http.DefaultClient, urls)
				if err != nil {
					t.Fatal(err)
				}
				lines, errOut := startCommand(t, 1, args...)
				base := strings.TrimPrefix(lines[0], "ready ")
				for _, user := range []string{"alice", "bob", "alice"} {
					req, err := http.NewRequest(http.MethodPost, base+"/graphql", bytes.NewReader(load.DefaultBody))
					if err != nil {
						t.Fatal(err)
					}
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Authorization", "Bearer "+user)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK || !bytes.HasPrefix(body, []byte(`{"data":{"users":[`)) {
						t.Fatalf("%s: gateway answered %d: %.200s", user, resp.StatusCode, body)
					}
					if want == nil {
						want = body
					} else if !bytes.Equal(body, want) {
						t.Errorf("%s: the answer differs from the first gateway's first:\n%.300s\nwant\n%.300s", user, body, want)
					}
				}
				after, err := schemas.Calls(context.Background(), http.DefaultClient, urls)
				if err != nil {
					t.Fatal(err)
				}
				if got := after - before; got != wantCalls {
					t.Errorf("the source schemas got %d calls for 3 gateway requests, want %d", got, wantCalls)
				}
				if on := strings.Contains(errOut.String(), ", response cache on, answering"); on != cache {
					t.Errorf("the startup line says the cache is on: %v, want %v:\n%s", on, cache, errOut.String())
				}
			})
		}
	}
}

// cacheCall is one call of a compare side as its SchemaOptions.Middleware
// saw it, in front of the response cache: the request's body, and whether
// the answer came from the cache (only a cache's answer has Age: the
// embedded schemas send none), its status, and whether its body has
// errors.
type cacheCall struct {
	schema, body string
	hit          bool
	status       int
	object       bool // the answer's body is a JSON object (a variable batch's is an array)
	errors       bool
}

// cacheCalls records the calls of every side of a compare run
// (compareSideOptions).
type cacheCalls struct {
	mu    sync.Mutex
	calls map[string][]*cacheCall // side -> calls, in the order they ended
}

func watchCacheCalls(t *testing.T) *cacheCalls {
	t.Helper()
	w := &cacheCalls{calls: map[string][]*cacheCall{}}
	compareSideOptions = func(side string, cfg env.Config) []transport.Option {
		var opts []transport.Option
		for name := range cfg.SourceSchemas {
			opts = append(opts, transport.WithSchemaOptions(name, transport.SchemaOptions{
				Middleware: []func(http.RoundTripper) http.RoundTripper{func(next http.RoundTripper) http.RoundTripper {
					return roundTripFunc(func(r *http.Request) (*http.Response, error) {
						body, err := io.ReadAll(r.Body)
						if err != nil {
							return nil, err
						}
						r.Body = io.NopCloser(bytes.NewReader(body))
						resp, err := next.RoundTrip(r)
						if err != nil {
							return nil, err
						}
						got, err := io.ReadAll(resp.Body)
						resp.Body.Close()
						if err != nil {
							return nil, err
						}
						resp.Body = io.NopCloser(bytes.NewReader(got))
						c := &cacheCall{schema: name, body: string(body), hit: resp.Header["Age"] != nil, status: resp.StatusCode,
							object: bytes.HasPrefix(got, []byte("{")), errors: bytes.Contains(got, []byte(`"errors":[{`))}
						w.mu.Lock()
						w.calls[side] = append(w.calls[side], c)
						w.mu.Unlock()
						return resp, nil
					})
				}},
			}))
		}
		return opts
	}
	t.Cleanup(func() { compareSideOptions = nil })
	return w
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestCompareCached: compare -cached runs the corpus twice with sides
// whose response caches answer (+cache: on for every source schema, in
// memory, shared), over the embedded schemas answering public,
// max-age=60: the built-in corpus, each pair of the first side without a
// cache against a side with it on one path, finds no difference in either
// pass; on the side with the cache, each second-pass call whose
// first-pass answer could be stored (a query's 200 without errors) is
// answered from the cache, unsent, and no other call is. A control, whose
// source schema numbers its answers: the cache's second pass gives the
// first pass's answers, and compare reports every one of them.
//
// A first answer that cannot be stored: a request batch's, a variable
// batch's (an array of answers), an answer with errors (an _entities
// answer's other entities are stored, but its failed one is sent again).
func TestCompareCached(t *testing.T) {
	reqs, err := compare.ReadCorpus(bytes.NewReader(corpus.Builtin))
	if err != nil {
		t.Fatal(err)
	}
	n := 2 * len(reqs)
	w := watchCacheCalls(t)
	code, stdout, stderr := runCmd("compare", "-cached", "-sides", "legacy,legacy+cache,sockets:h1+cache")
	if code != 0 {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var want strings.Builder
	for _, p := range []string{"legacy vs legacy+cache", "legacy vs sockets:h1+cache"} {
		fmt.Fprintf(&want, "== %s\n%[2]d requests: %[2]d identical, 0 different\nfail-on total>0: passed\n", p, n)
	}
	if stdout != want.String() {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want.String())
	}
	compareSideOptions = nil
	if hits := countHits(w.calls["legacy"]); hits != 0 {
		t.Errorf("legacy, without a cache, answered %d calls with Age", hits)
	}
	for _, side := range []string{"legacy+cache", "sockets:h1+cache"} {
		calls := w.calls[side]
		if len(calls) != n {
			t.Fatalf("%s: %d calls, want %d", side, len(calls), n)
		}
		first := map[string]*cacheCall{} // schema and body -> its first-pass call
		stored, hits := 0, 0
		for _, c := range calls {
			k := c.schema + " " + c.body
			f, again := first[k]
			if !again {
				first[k] = c
				if c.hit {
					t.Errorf("%s: a first call was answered from the cache: %s %.120s", side, c.schema, c.body)
				}
				continue
			}
			storable := f.status == http.StatusOK && f.object && !f.errors && strings.HasPrefix(c.body, "{")
			if storable {
				stored++
			}
			if c.hit {
				hits++
			}
			if c.hit != storable {
				t.Errorf("%s: second call answered from the cache %v; the first got %d, errors %v: %s %.160s", side, c.hit, f.status, f.errors, c.schema, c.body)
			}
		}
		if stored < len(reqs)/2 {
			t.Errorf("%s: %d of %d first answers could be stored, want most", side, stored, len(reqs))
		}
		t.Logf("%s: %d calls, %d answered from the cache (%d first answers storable)", side, len(calls), hits, stored)
	}

	t.Run("control", func(t *testing.T) {
		// Each query's answer changes after both sides have asked it
		// once: version 1 for the first pass, 2 for the second.
		var mu sync.Mutex
		asked := map[string]int{}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			asked[string(body)]++
			version := (asked[string(body)] + 1) / 2
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "public, max-age=60")
			fmt.Fprintf(w, `{"data":{"version":%d}}`, version)
		}))
		defer srv.Close()
		dir := t.TempDir()
		cfgFile, corpusFile := filepath.Join(dir, "transport.yaml"), filepath.Join(dir, "corpus.jsonl")
		if err := os.WriteFile(cfgFile, []byte("source_schemas:\n  products:\n    url: "+srv.URL+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(corpusFile, []byte(`{"name":"a","schema":"products","body":{"query":"{ a }"}}`+"\n"+
			`{"name":"b","schema":"products","body":{"query":"{ b }"}}`+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runCmd("compare", "-cached", "-config", cfgFile, "-corpus", corpusFile, "-sides", "sockets,sockets+cache")
		if code != 1 || !strings.Contains(stdout, "body data.version: sockets has 2 at data.version; sockets+cache has 1 (2 requests)\n     a (again), b (again)\n") ||
			!strings.Contains(stdout, "4 requests: 2 identical, 2 different\n") {
			t.Errorf("exit %d, want 1 and the second pass different\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
	})
}

func countHits(calls []*cacheCall) int {
	n := 0
	for _, c := range calls {
		if c.hit {
			n++
		}
	}
	return n
}
