package rawhttp

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// jsonBody is a 1 KiB JSON answer, as the benchmarks use.
var jsonBody = func() []byte {
	b := []byte(`{"data":{"items":[`)
	for i := 0; len(b) < 1024-40; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, '}')
	}
	b = append(b, `],"pad":"`...)
	for len(b) < 1024-3 {
		b = append(b, 'x')
	}
	return append(b, `"}}`...)
}()

func startResponder(t *testing.T) *Responder {
	t.Helper()
	r, err := Start(jsonBody)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestJSONBodyIs1KiB(t *testing.T) {
	if len(jsonBody) != 1024 {
		t.Fatalf("len(jsonBody) = %d, want 1024", len(jsonBody))
	}
}

// TestResponderAnswersNetHTTP sends requests with net/http's client and
// checks the answers and that they all used one kept-alive connection.
func TestResponderAnswersNetHTTP(t *testing.T) {
	defer goleak.VerifyNone(t)
	r := startResponder(t)
	var dials atomic.Int32
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	bodies := []string{`{"query":"{ ok }"}`, strings.Repeat("x", 300), "", strings.Repeat("y", 20000)}
	for i, body := range bodies {
		resp, err := client.Post(r.URL()+"/graphql", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("request %d: reading body: %v", i, err)
		}
		if resp.StatusCode != 200 || resp.Proto != "HTTP/1.1" {
			t.Errorf("request %d: %s %s, want HTTP/1.1 200", i, resp.Proto, resp.Status)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("request %d: Content-Type %q, want application/json", i, ct)
		}
		if resp.ContentLength != 1024 || !bytes.Equal(got, jsonBody) {
			t.Errorf("request %d: body of %d bytes (Content-Length %d), want the 1 KiB JSON body", i, len(got), resp.ContentLength)
		}
	}
	// A GET without a body is answered too.
	resp, err := client.Get(r.URL() + "/")
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if n := dials.Load(); n != 1 {
		t.Errorf("%d connections dialed, want 1 kept alive", n)
	}
	tr.CloseIdleConnections()
	if err := r.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// rawExchange writes req on a new connection to r in chunks of at most
// step bytes and returns everything read until the responder closes the
// connection or readFor passes.
func rawExchange(t *testing.T, r *Responder, req string, step int, readFor time.Duration) string {
	t.Helper()
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for len(req) > 0 {
		n := min(step, len(req))
		if _, err := io.WriteString(c, req[:n]); err != nil {
			t.Fatal(err)
		}
		req = req[n:]
	}
	c.SetReadDeadline(time.Now().Add(readFor))
	got, _ := io.ReadAll(c)
	return string(got)
}

func post(path, body string, extra ...string) string {
	return "POST " + path + " HTTP/1.1\r\nHost: test\r\n" + strings.Join(extra, "") +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

// responses reads the responses in s with net/http's parser and returns
// their status codes; it fails the test if a body is not what the status
// promises.
func responses(t *testing.T, s string) []int {
	t.Helper()
	br := bufio.NewReader(strings.NewReader(s))
	var codes []int
	for {
		if _, err := br.Peek(1); err == io.EOF {
			return codes
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v (%d bytes read)", len(codes), err, len(s))
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("response %d: body: %v", len(codes), err)
		}
		if resp.StatusCode == 200 && !bytes.Equal(body, jsonBody) {
			t.Fatalf("response %d: body of %d bytes, want the JSON body", len(codes), len(body))
		}
		codes = append(codes, resp.StatusCode)
	}
}

var tooLarge = func() string {
	s := "POST / HTTP/1.1\r\nX-Big: "
	return s + strings.Repeat("b", maxHead-len(s))
}()

func TestResponderWire(t *testing.T) {
	three := post("/a", `{"query":"{ a }"}`) + post("/b", "") + post("/c", strings.Repeat("z", 5000))
	tests := []struct {
		name string
		req  string
		step int // write size: pipelined requests and heads split across reads
		want []int
	}{
		{"pipelined", three, len(three), []int{200, 200, 200}},
		{"split in bytes", three, 1, []int{200, 200, 200}},
		{"split in odd chunks", three, 7, []int{200, 200, 200}},
		{"connection close", post("/", "abc", "Connection: close\r\n") + post("/", ""), 1 << 20, []int{200}},
		{"HTTP/1.0 closes", "POST / HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}", 1 << 20, []int{200}},
		{"lower-case headers", "POST / HTTP/1.1\r\ncontent-length: 4\r\nconnection: keep-alive\r\n\r\nnull" + post("/", ""), 1 << 20, []int{200, 200}},
		{"chunked is not served", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 1 << 20, []int{501}},
		{"bad Content-Length", "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 1 << 20, []int{400}},
		{"not HTTP/1.x", "POST / HTTP/2.0\r\n\r\n", 1 << 20, []int{400}},
		{"header line without colon", "POST / HTTP/1.1\r\nHost test\r\n\r\n", 1 << 20, []int{400}},
		// Exactly maxHead bytes without the blank line: the responder reads
		// all of it before answering, so closing resets nothing.
		{"head too large", tooLarge, 1 << 20, []int{431}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := startResponder(t)
			got := responses(t, rawExchange(t, r, tt.req, tt.step, 300*time.Millisecond))
			if !equalInts(got, tt.want) {
				t.Errorf("statuses %v, want %v", got, tt.want)
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestResponderCloseWaits closes the responder while a client holds an
// idle connection and another is half-way through a request head: Close
// must end both and leave no goroutine behind.
func TestResponderCloseWaits(t *testing.T) {
	defer goleak.VerifyNone(t)
	r, err := Start(jsonBody)
	if err != nil {
		t.Fatal(err)
	}
	idle, err := Dial(r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if _, err := idle.Post("/", nil); err != nil {
		t.Fatal(err)
	}
	half, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer half.Close()
	io.WriteString(half, "POST / HTTP/1.1\r\nContent-Len")

	done := make(chan error)
	go func() { done <- r.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	if _, err := idle.Post("/", nil); err == nil {
		t.Error("a request after Close succeeded")
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestClientPost(t *testing.T) {
	r := startResponder(t)
	c, err := Dial(r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i, n := range []int{300, 0, 10000, 300} {
		got, err := c.Post("/graphql", bytes.Repeat([]byte("q"), n))
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if !bytes.Equal(got, jsonBody) {
			t.Fatalf("call %d: body of %d bytes, want the JSON body", i, len(got))
		}
	}
}

// TestClientParsesNetHTTP checks the floor client against net/http's
// server, whose responses carry headers the responder's do not.
func TestClientParsesNetHTTP(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type")+" "+r.Header.Get("X-Request-Id")+" "+string(b))
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(jsonBody)
	}))
	defer srv.Close()
	c, err := Dial(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.AddHeader("X-Request-Id", "r1")
	body, err := c.Post("/graphql", []byte(`{"query":"{ ok }"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(body, jsonBody) {
		t.Errorf("body of %d bytes, want the JSON body", len(body))
	}
	if _, err := c.Post("/missing", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("404: error %v, want one naming the status", err)
	}
	// The connection is still usable after a non-200 response.
	if _, err := c.Post("/graphql", []byte("{}")); err != nil {
		t.Errorf("after a 404: %v", err)
	}
	want := []string{
		`POST /graphql application/json; charset=utf-8 r1 {"query":"{ ok }"}`,
		`POST /missing application/json; charset=utf-8 r1 `,
		`POST /graphql application/json; charset=utf-8 r1 {}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("server saw\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestClientRejectsResponseWithoutLength(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("a"))
		w.(http.Flusher).Flush() // chunked from here on
		w.Write([]byte("b"))
	}))
	defer srv.Close()
	c, err := Dial(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Post("/", nil); err != ErrUnsupported {
		t.Errorf("error %v, want ErrUnsupported", err)
	}
}

// TestFloorAllocs is the fixture's promise: no allocation per call once the
// buffers have grown. The responder runs in this process, so the count
// covers its side of each call too.
func TestFloorAllocs(t *testing.T) {
	r := startResponder(t)
	c, err := Dial(r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := bytes.Repeat([]byte("q"), 300)
	var failed error
	allocs := testing.AllocsPerRun(1000, func() {
		body, err := c.Post("/graphql", req)
		if err != nil || len(body) != len(jsonBody) {
			failed = err
		}
	})
	if failed != nil {
		t.Fatal(failed)
	}
	if allocs != 0 {
		t.Errorf("%v allocations per call, want 0", allocs)
	}
}

func FuzzParseHead(f *testing.F) {
	f.Add([]byte("POST / HTTP/1.1\r\nContent-Length: 12\r\n\r\n"))
	f.Add([]byte("GET / HTTP/1.0\r\nConnection: Close\r\n\r\n"))
	f.Add([]byte("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"))
	f.Fuzz(func(t *testing.T, head []byte) {
		req := parseHead(head)
		if req.length < 0 {
			t.Fatalf("negative length %d", req.length)
		}
		if !req.bad && req.length > 0 && !bytes.Contains(bytes.ToLower(head), []byte("content-length")) {
			t.Fatalf("length %d without a Content-Length header", req.length)
		}
	})
}
