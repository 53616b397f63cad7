package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/fusiongo/transport/cmd/fusion-transport/internal/load"
	"github.com/fusiongo/transport/cmd/fusion-transport/internal/schemas"
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
