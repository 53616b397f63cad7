//go:build unix

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/valyala/fasthttp"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/rawhttp"
)

// BenchmarkPeers puts the transport's engines beside the fastest Go client
// in one run: per iteration one source schema call, a POST of a 300-byte
// GraphQL request with two forwarded gateway headers, answered with 1 KiB of
// JSON by the zero-allocation responder of the root's BenchmarkCall
// (internal/testsupport/rawhttp) in a child process, the body read to its
// end. The sides:
//
//   - floor: rawhttp.Client, one write and one read per call, the least a
//     client can do;
//   - fasthttp.HostClient: Do with one pre-built Request and Response
//     reused by every call, as fasthttp users write it;
//   - http.Client: net/http's Client on a cloned DefaultTransport;
//   - sockets:nethttp/Post and sockets:h1/Post: the transport's Post on the
//     sockets path with each engine; legacy/Post the legacy path.
//
// client-cpu-ns/op is this process's CPU time (user+sys, getrusage) per
// call, its garbage collection included; the responder's runs in its own
// process. It lives in the e2e module because the root module does not
// depend on fasthttp. Run it several times, interleaved, and compare the
// per-run ratios (docs/benchmarks.md):
//
//	cd e2e && for i in 1 2 3 4 5 6; do go test -run '^$' -bench BenchmarkPeers -benchtime 20000x .; done
func BenchmarkPeers(b *testing.B) {
	srv := startPeersResponder(b)
	url := srv.url + "/graphql"

	b.Run("floor", func(b *testing.B) {
		c, err := rawhttp.Dial(srv.addr)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		c.AddHeader("Authorization", peersAuthorization)
		c.AddHeader("X-Request-Id", peersRequestID)
		peersMeasure(b, srv, func() error {
			body, err := c.Post("/graphql", peersQuery)
			return checkLen(len(body), err)
		})
	})

	b.Run("fasthttp.HostClient", func(b *testing.B) {
		hc := &fasthttp.HostClient{Addr: srv.addr}
		defer hc.CloseIdleConnections()
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI(url)
		req.Header.SetMethod(fasthttp.MethodPost)
		req.Header.SetContentType(peersContentType)
		req.Header.Set("Accept", peersAccept)
		req.Header.Set("Authorization", peersAuthorization)
		req.Header.Set("X-Request-Id", peersRequestID)
		req.SetBody(peersQuery)
		peersMeasure(b, srv, func() error {
			if err := hc.Do(req, resp); err != nil {
				return err
			}
			if resp.StatusCode() != fasthttp.StatusOK {
				return fmt.Errorf("status %d", resp.StatusCode())
			}
			return checkLen(len(resp.Body()), nil)
		})
	})

	var buf []byte // the response body, reused by every call
	b.Run("http.Client", func(b *testing.B) {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr}
		peersMeasure(b, srv, func() error {
			req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(peersQuery))
			if err != nil {
				return err
			}
			req.Header["Content-Type"] = []string{peersContentType}
			req.Header["Accept"] = []string{peersAccept}
			req.Header["Authorization"] = []string{peersAuthorization}
			req.Header["X-Request-Id"] = []string{peersRequestID}
			resp, err := client.Do(req)
			return readPeersBody(resp, err, &buf)
		})
	})

	gateway, _ := http.NewRequest(http.MethodPost, "http://gateway.test/graphql", nil)
	gateway.Header.Set("Authorization", peersAuthorization)
	gateway.Header.Set("X-Request-Id", peersRequestID)
	gctx := transport.WithGatewayRequest(context.Background(), gateway)
	for _, side := range []struct {
		name   string
		path   env.Path
		engine string
	}{
		{"sockets:h1", env.PathSockets, env.EngineH1},
		{"sockets:nethttp", env.PathSockets, env.EngineNetHTTP},
		{"legacy", env.PathLegacy, ""},
	} {
		b.Run(side.name, func(b *testing.B) {
			cfg := env.Config{
				Transport:      side.path,
				ForwardHeaders: []string{"Authorization", "X-Request-Id"},
				Defaults:       env.Settings{Engine: side.engine},
				SourceSchemas:  map[string]env.SourceSchema{"products": {URL: url}},
			}
			inv, err := transport.New(cfg,
				transport.WithLookupEnv(func(string) (string, bool) { return "", false }),
				transport.WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				b.Fatal(err)
			}
			defer inv.Close()
			b.Run("Post", func(b *testing.B) {
				peersMeasure(b, srv, func() error {
					resp, err := inv.Post(gctx, "products", peersQuery)
					return readPeersBody(resp, err, &buf)
				})
			})
		})
	}
}

// The request and the answer of every call, as the root's BenchmarkCall
// sends them (a copy: the root's are in its _test files).
var (
	peersQuery  = padJSON(`{"query":"query TopProducts($first: Int!) { topProducts(first: $first) { upc name price weight inStock shippingEstimate reviews { id body author { id username } } } }","operationName":"TopProducts","variables":{"first":5}}`, 300)
	peersAnswer = func() []byte {
		var sb strings.Builder
		sb.WriteString(`{"data":{"topProducts":[`)
		for i := 1; sb.Len() < 900; i++ {
			if i > 1 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `{"upc":"%d","name":"Product %d","price":%d,"weight":%d,"inStock":true}`, i, i, 100*i+99, 10+i)
		}
		sb.WriteString(`]}}`)
		return padJSON(sb.String(), 1024)
	}()
	peersContentType   = "application/json; charset=utf-8"
	peersAccept        = "application/graphql-response+json; charset=utf-8, application/json; charset=utf-8"
	peersAuthorization = "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJiZW5jaCJ9.c2lnbmF0dXJlLW9mLWEtYmVuY2gtdG9rZW4"
	peersRequestID     = "3f6c2a1e-9b7d-4e0a-8c55-1d2e3f4a5b6c"
)

// padJSON returns the JSON object s with spaces before its closing brace
// up to size bytes.
func padJSON(s string, size int) []byte {
	return []byte(s[:len(s)-1] + strings.Repeat(" ", size-len(s)) + "}")
}

func checkLen(n int, err error) error {
	if err == nil && n != len(peersAnswer) {
		err = fmt.Errorf("body of %d bytes, want %d", n, len(peersAnswer))
	}
	return err
}

// peersWarmCalls run before the measured loop, so that the connection is
// open and every buffer and pool has grown.
const peersWarmCalls = 200

// peersMeasure runs call in a b.Loop and reports allocations and the
// client's CPU per call.
func peersMeasure(b *testing.B, srv *peersResponder, call func() error) {
	b.Helper()
	for range peersWarmCalls {
		if err := call(); err != nil {
			b.Fatalf("warm-up: %v", err)
		}
	}
	b.ReportAllocs()
	self0, peer0 := selfCPU(), srv.cpu(b)
	n := 0
	for b.Loop() {
		if err := call(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	self, peer := selfCPU()-self0, srv.cpu(b)-peer0
	b.ReportMetric(float64(self)/float64(n), "client-cpu-ns/op")
	b.ReportMetric(float64(self+peer)/float64(n), "cpu-ns/op")
}

// readPeersBody reads a response body to its end into *buf, closes it and
// checks the answer; it allocates only on errors.
func readPeersBody(resp *http.Response, err error, buf *[]byte) error {
	if err != nil {
		return err
	}
	p := (*buf)[:0]
	for {
		if len(p) == cap(p) {
			p = append(p, 0)[:len(p)]
		}
		n, rerr := resp.Body.Read(p[len(p):cap(p)])
		p = p[:len(p)+n]
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			resp.Body.Close()
			return rerr
		}
	}
	*buf = p
	if err := resp.Body.Close(); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	return checkLen(len(p), nil)
}

func selfCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// peersResponderEnv turns this test binary into BenchmarkPeers' responder
// process; see TestPeersResponderProcess.
const peersResponderEnv = "TRANSPORT_PEERS_RESPONDER"

// peersResponder is the responder child process: its address, and a pipe
// to ask it for its CPU time.
type peersResponder struct {
	addr, url string
	child     *exec.Cmd
	stdin     io.WriteCloser
	stdout    *bufio.Reader
}

func startPeersResponder(b *testing.B) *peersResponder {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestPeersResponderProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), peersResponderEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	srv := &peersResponder{child: cmd, stdin: stdin, stdout: bufio.NewReader(stdout)}
	b.Cleanup(func() {
		stdin.Close() // the child exits at the end of its input
		cmd.Wait()
	})
	for {
		line, err := srv.stdout.ReadString('\n')
		if err != nil {
			b.Fatalf("responder process: %v", err)
		}
		if addr, ok := strings.CutPrefix(strings.TrimSpace(line), "addr="); ok {
			srv.addr, srv.url = addr, "http://"+addr
			return srv
		}
	}
}

func (s *peersResponder) cpu(b *testing.B) int64 {
	if _, err := io.WriteString(s.stdin, "cpu\n"); err != nil {
		b.Fatalf("responder process: %v", err)
	}
	line, err := s.stdout.ReadString('\n')
	if err != nil {
		b.Fatalf("responder process: %v", err)
	}
	ns, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(line), "cpu="), 10, 64)
	if err != nil {
		b.Fatalf("responder process: %q: %v", line, err)
	}
	return ns
}

// TestPeersResponderProcess is not a test: it is the body of
// BenchmarkPeers' responder process, and skips unless
// TRANSPORT_PEERS_RESPONDER is set. It prints "addr=host:port", answers each
// "cpu" line on its input with "cpu=<ns>", and exits at the end of its input.
func TestPeersResponderProcess(t *testing.T) {
	if os.Getenv(peersResponderEnv) != "1" {
		t.Skip("BenchmarkPeers' responder process; runs only when the benchmark starts it")
	}
	r, err := rawhttp.Start(peersAnswer)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("addr=%s\n", r.Addr())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() == "cpu" {
			fmt.Printf("cpu=%d\n", selfCPU())
		}
	}
	r.Close()
	os.Exit(0)
}
