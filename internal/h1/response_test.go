package h1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// chanOwner reports each BodyDone on a channel.
type chanOwner chan bool

func (c chanOwner) BodyDone(reuse bool) { c <- reuse }

// done returns the one BodyDone call, failing if there is none or more.
func (c chanOwner) done(t *testing.T) bool {
	t.Helper()
	select {
	case reuse := <-c:
		select {
		case <-c:
			t.Fatal("BodyDone called twice")
		default:
		}
		return reuse
	default:
		t.Fatal("BodyDone not called")
		return false
	}
}

func (c chanOwner) none(t *testing.T) {
	t.Helper()
	select {
	case <-c:
		t.Fatal("BodyDone called")
	default:
	}
}

// TestBodyDone checks the Owner contract when a body is read to its end
// or closed early: exactly one BodyDone, with reuse true only when the
// framing allows another response and nothing is left in the reader.
func TestBodyDone(t *testing.T) {
	const chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	for _, tt := range []struct {
		name   string
		in     string
		read   int  // bytes to read before Close; -1 reads to EOF
		nobody bool // Body is http.NoBody: BodyDone never called
		reuse  bool
	}{
		{"length read to end", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc", -1, false, true},
		{"length, bytes left over", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcX", -1, false, false},
		{"length, Connection close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 3\r\n\r\nabc", -1, false, false},
		{"HTTP/1.0 without keep-alive", "HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nabc", -1, false, false},
		{"HTTP/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 3\r\n\r\nabc", -1, false, true},
		{"length short", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabc", -1, false, false},
		{"close-delimited", "HTTP/1.1 200 OK\r\n\r\nabc", -1, false, false},
		{"chunked with trailer", chunked + "3\r\nabc\r\n0\r\nX: y\r\n\r\n", -1, false, true},
		{"chunked malformed", chunked + "3\r\nabcX\r\n0\r\n\r\n", -1, false, false},
		{"chunked, bytes left over", chunked + "3\r\nabc\r\n0\r\n\r\nX", -1, false, false},
		{"close early, rest buffered", "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nabcdef", 2, false, true},
		{"close early, chunked rest buffered", chunked + "3\r\nabc\r\n2\r\nde\r\n0\r\nX: y\r\n\r\n", 1, false, true},
		{"close early, rest not buffered", "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabcdef", 2, false, false},
		{"close early, chunked rest not buffered", chunked + "3\r\nabc\r\n2\r\nde\r\n0\r\n", 1, false, false},
		{"close early, more than DrainLimit", "HTTP/1.1 200 OK\r\nContent-Length: 4099\r\n\r\n" + strings.Repeat("x", 4099), 2, false, false},
		{"close early, chunked more than DrainLimit", chunked + "1003\r\n" + strings.Repeat("x", 4099) + "\r\n0\r\n\r\n", 1, false, false},
		{"close early, close-delimited", "HTTP/1.1 200 OK\r\n\r\nabc", 1, false, false},
		{"close unread, exactly DrainLimit", "HTTP/1.1 200 OK\r\nContent-Length: 4096\r\n\r\n" + strings.Repeat("x", 4096), 0, false, true},
		{"101 closed", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n", -1, false, false},
		{"204", "HTTP/1.1 204 No Content\r\n\r\n", 0, true, false},
		{"Content-Length 0", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 0, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			owner := make(chanOwner, 2)
			// A buffer larger than the inputs, so "buffered" means all.
			br := bufio.NewReaderSize(strings.NewReader(tt.in), 8<<10)
			br.Peek(len(tt.in))
			resp, err := ReadResponse(br, nil, 0, owner)
			if err != nil {
				t.Fatal(err)
			}
			if tt.nobody {
				if resp.Body != http.NoBody {
					t.Fatalf("Body = %T, want http.NoBody", resp.Body)
				}
				resp.Body.Close()
				owner.none(t)
				return
			}
			if tt.read < 0 {
				io.ReadAll(resp.Body)
			} else if tt.read > 0 {
				if _, err := io.ReadFull(resp.Body, make([]byte, tt.read)); err != nil {
					t.Fatal(err)
				}
			}
			if tt.read >= 0 {
				owner.none(t) // nothing before Close
			}
			resp.Body.Close()
			resp.Body.Close()
			if got := owner.done(t); got != tt.reuse {
				t.Errorf("BodyDone(%t), want %t", got, tt.reuse)
			}
			if n, err := resp.Body.Read(make([]byte, 1)); n != 0 || !errors.Is(err, ErrBodyClosed) {
				t.Errorf("Read after Close = %d, %v; want ErrBodyClosed", n, err)
			}
		})
	}
}

// TestCloseDrainLeavesNextResponse checks that Close's drain stops at the
// body's end: the next response on the connection is still readable.
func TestCloseDrainLeavesNextResponse(t *testing.T) {
	in := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X\r\n\r\n3\r\nabc\r\n0\r\nX: y\r\n\r\n" +
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"
	br := bufio.NewReader(strings.NewReader(in))
	br.Peek(len(in))
	owner := make(chanOwner, 2)
	resp, err := ReadResponse(br, nil, 0, owner)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if owner.done(t) {
		t.Error("BodyDone(true) with the next response buffered")
	}
	if got := resp.Trailer.Get("X"); got != "y" {
		t.Errorf("Trailer X = %q after the drain, want y", got)
	}
	resp, err = ReadResponse(br, nil, 0, owner)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if string(b) != "hi" || err != nil {
		t.Fatalf("next body = %q, %v", b, err)
	}
	if !owner.done(t) {
		t.Error("BodyDone(false) for the last response read to its end")
	}
}

// TestCloseDuringBlockedRead closes a body while another goroutine is
// blocked in Read on a connection: Close tells the owner BodyDone(false)
// at once, and closing the connection ends the Read.
func TestCloseDuringBlockedRead(t *testing.T) {
	for _, head := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
		"HTTP/1.1 200 OK\r\n\r\n",
	} {
		client, server := net.Pipe()
		go server.Write([]byte(head))
		owner := make(chanOwner, 2)
		resp, err := ReadResponse(bufio.NewReader(client), nil, 0, owner)
		if err != nil {
			t.Fatal(err)
		}
		readErr := make(chan error)
		go func() {
			_, err := resp.Body.Read(make([]byte, 10))
			readErr <- err
		}()
		// The Read is blocked once the server's next Write is accepted
		// by it... but a Write would unblock it. Instead wait until the
		// Read holds the body: Close then takes the concurrent path.
		waitReading(t, resp.Body.(*Body))
		resp.Body.Close()
		if reuse := <-owner; reuse {
			t.Error("BodyDone(true) for a Close during a blocked Read")
		}
		client.Close() // what the owner does
		if err := <-readErr; err == nil {
			t.Error("blocked Read ended without error")
		}
		owner.none(t)
		if _, err := resp.Body.Read(make([]byte, 1)); !errors.Is(err, ErrBodyClosed) {
			t.Errorf("Read after Close: %v", err)
		}
		server.Close()
	}
}

// waitReading waits until a Read has taken b's reader.
func waitReading(t *testing.T, b *Body) {
	t.Helper()
	for {
		b.mu.Lock()
		r := b.reading
		b.mu.Unlock()
		if r {
			return
		}
		// Let the reading goroutine run; no sleep, no wall-clock bound.
		runtime.Gosched()
	}
}

// TestBodyDoneOnceUnderRace races Read to the end against Close.
func TestBodyDoneOnceUnderRace(t *testing.T) {
	for i := 0; i < 200; i++ {
		in := "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"
		owner := make(chanOwner, 2)
		resp, err := ReadResponse(bufio.NewReader(strings.NewReader(in)), nil, 0, owner)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); io.ReadAll(resp.Body) }()
		go func() { defer wg.Done(); resp.Body.Close() }()
		wg.Wait()
		owner.done(t)
	}
}

// TestReadResponseFields checks the Response fields h1 fills beyond the
// differential test: Request, Uncompressed, and the body type.
func TestReadResponseFields(t *testing.T) {
	req, _ := http.NewRequest("GET", "http://example.com/", nil)
	resp, err := ReadResponse(bufio.NewReader(strings.NewReader("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx")), req, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Request != req || resp.Uncompressed || resp.TLS != nil {
		t.Errorf("Request %p (want %p), Uncompressed %t, TLS %v", resp.Request, req, resp.Uncompressed, resp.TLS)
	}
	if _, ok := resp.Body.(*Body); !ok {
		t.Errorf("Body is %T", resp.Body)
	}
	// Trailer keys declared before EOF, filled at EOF.
	resp, err = ReadResponse(bufio.NewReader(strings.NewReader(
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: a, B\r\n\r\n1\r\nx\r\n0\r\nA: 1\r\nC: 3\r\n\r\n")), nil, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (http.Header{"A": nil, "B": nil}); !equalHeader(resp.Trailer, want) {
		t.Errorf("Trailer before EOF = %v, want %v", resp.Trailer, want)
	}
	io.ReadAll(resp.Body)
	if want := (http.Header{"A": {"1"}, "B": nil, "C": {"3"}}); !equalHeader(resp.Trailer, want) {
		t.Errorf("Trailer at EOF = %v, want %v", resp.Trailer, want)
	}
	// A 101's body reads EOF and does not touch the reader.
	br := bufio.NewReader(strings.NewReader("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\nraw"))
	resp, err = ReadResponse(br, nil, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := resp.Body.Read(make([]byte, 3)); n != 0 || err != io.EOF || resp.StatusCode != 101 {
		t.Errorf("101: %d, Read = %d, %v", resp.StatusCode, n, err)
	}
	if rest, _ := io.ReadAll(br); string(rest) != "raw" {
		t.Errorf("after the 101 the reader holds %q", rest)
	}
}

func equalHeader(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || strings.Join(v, "\x00") != strings.Join(w, "\x00") || (v == nil) != (w == nil) {
			return false
		}
	}
	return true
}

// TestNoResponse checks the error for a connection that ends before the
// first byte: io.ErrUnexpectedEOF as net/http, and ErrNoResponse.
func TestNoResponse(t *testing.T) {
	_, err := ReadResponse(bufio.NewReader(strings.NewReader("")), nil, 0, nil)
	if !errors.Is(err, io.ErrUnexpectedEOF) || !errors.Is(err, ErrNoResponse) {
		t.Errorf("err = %v", err)
	}
	_, err = ReadResponse(bufio.NewReader(strings.NewReader("HTTP/1.1 200 OK\r\n")), nil, 0, nil)
	if !errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, ErrNoResponse) {
		t.Errorf("err = %v", err)
	}
	_, err = ReadResponse(bufio.NewReader(strings.NewReader("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n")), nil, 0, nil)
	if !errors.Is(err, ErrMalformed) || !strings.HasPrefix(err.Error(), "h1: ") {
		t.Errorf("err = %v", err)
	}
}

// TestLongHead reads heads longer than the bufio.Reader's buffer, with a
// long folded value, against http.ReadResponse.
func TestLongHead(t *testing.T) {
	long := strings.Repeat("v", 5000)
	for _, in := range []string{
		"HTTP/1.1 200 OK\r\nX: " + long + "\r\nContent-Length: 2\r\n\r\nhi",
		"HTTP/1.1 200 " + long + "\r\nContent-Length: 2\r\n\r\nhi",
		"HTTP/1.1 200 OK\r\nX: a\r\n " + long + "\r\n\tb \r\nContent-Length: 2\r\n\r\nhi",
		"HTTP/1.1 200 OK\r\n" + strings.Repeat("K: v\r\n", 40) + "Content-Length: 2\r\n\r\nhi",
	} {
		if d := differ([]byte(in), "GET"); d != "" {
			t.Errorf("%.60q: %s", in, d)
		}
	}
	// With a 16-byte buffer every line spans buffers, and "\r\n" straddles.
	in := "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Long: abcdefghijklmn\r\n\r\n"
	br := bufio.NewReaderSize(strings.NewReader(in), 16)
	resp, err := ReadResponse(br, &http.Request{Method: "HEAD"}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("X-Long") != "abcdefghijklmn" || resp.Header.Get("Content-Type") != "text/plain" {
		t.Errorf("Header = %v", resp.Header)
	}
}

// TestAllocs asserts the allocation figure of a 200 response with 7
// header fields and a Content-Length body read to its end: the
// Response with its Body, room for 8 values and the head's bytes (1), the
// Header map (2: Go's map and its first group). A head larger than the
// largest room (respRoomL) takes one allocation more (TestAllocsLargeHead).
func TestAllocs(t *testing.T) {
	in := []byte("HTTP/1.1 200 OK\r\n" +
		"Content-Type: application/json\r\n" +
		"Content-Length: 13\r\n" +
		"Date: Mon, 02 Jan 2006 15:04:05 GMT\r\n" +
		"Server: test\r\n" +
		"Vary: Accept-Encoding\r\n" +
		"x-request-id: 1234\r\n" +
		"Cache-Control: no-store\r\n" +
		"\r\n" +
		`{"data":null}`)
	r := bytes.NewReader(in)
	br := bufio.NewReader(r)
	req := &http.Request{Method: "POST"}
	buf := make([]byte, 64)
	var owner nopOwner
	allocs := testing.AllocsPerRun(100, func() {
		r.Reset(in)
		br.Reset(r)
		resp, err := ReadResponse(br, req, 0, owner)
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := resp.Body.Read(buf); err != nil {
				break
			}
		}
		resp.Body.Close()
	})
	if allocs != 3 {
		t.Errorf("allocations = %v, want 3", allocs)
	}
}

// TestAllocsLargeHead: a head beyond respBody's room is copied into a
// string of its own, and its header reads the same.
func TestAllocsLargeHead(t *testing.T) {
	long := strings.Repeat("v", len(respRoomL{}.room))
	in := []byte("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nX-Long: " + long + "\r\nContent-Length: 2\r\n\r\nok")
	r := bytes.NewReader(in)
	br := bufio.NewReader(r)
	req := &http.Request{Method: "POST"}
	var owner nopOwner
	allocs := testing.AllocsPerRun(100, func() {
		r.Reset(in)
		br.Reset(r)
		resp, err := ReadResponse(br, req, 0, owner)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Header.Get("X-Long") != long || resp.Header.Get("Content-Type") != "text/plain" {
			t.Fatalf("Header = %v", resp.Header)
		}
		resp.Body.Close()
	})
	if allocs != 4 {
		t.Errorf("allocations = %v, want 4", allocs)
	}
}

type nopOwner struct{}

func (nopOwner) BodyDone(bool) {}

func BenchmarkReadResponse(b *testing.B) {
	in := []byte("HTTP/1.1 200 OK\r\n" +
		"Content-Type: application/json\r\n" +
		"Content-Length: 13\r\n" +
		"Date: Mon, 02 Jan 2006 15:04:05 GMT\r\n" +
		"Server: test\r\n" +
		"Vary: Accept-Encoding\r\n" +
		"X-Request-Id: 1234\r\n" +
		"\r\n" +
		`{"data":null}`)
	req := &http.Request{Method: "POST"}
	buf := make([]byte, 64)
	for _, bb := range []struct {
		name string
		read func(*bufio.Reader) (*http.Response, error)
	}{
		{"h1", func(br *bufio.Reader) (*http.Response, error) { return ReadResponse(br, req, 0, nopOwner{}) }},
		{"net-http", func(br *bufio.Reader) (*http.Response, error) { return http.ReadResponse(br, req) }},
	} {
		b.Run(bb.name, func(b *testing.B) {
			r := bytes.NewReader(in)
			br := bufio.NewReader(r)
			b.ReportAllocs()
			for b.Loop() {
				r.Reset(in)
				br.Reset(r)
				resp, err := bb.read(br)
				if err != nil {
					b.Fatal(err)
				}
				for {
					if _, err := resp.Body.Read(buf); err != nil {
						break
					}
				}
				resp.Body.Close()
			}
		})
	}
}

// TestLentAllocs: a response read into a Lent, which is Reset after
// each, allocates nothing once the Lent's map and room have grown (the
// warm-up run of AllocsPerRun reads the larger head), and each response
// reads as its own.
func TestLentAllocs(t *testing.T) {
	answers := [][]byte{
		// A head larger than any room of newRespBody: the Lent's grows.
		[]byte("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nX-N: one\r\nX-Long: " + strings.Repeat("v", 400) + "\r\nContent-Length: 7\r\n\r\n{\"a\":1}"),
		[]byte("HTTP/1.1 503 Service Unavailable\r\nX-N: two\r\nX-N: deux\r\nContent-Length: 3\r\n\r\nbad"),
	}
	want := []struct {
		code   int
		n      []string
		body   string
		fields int
	}{{200, []string{"one"}, `{"a":1}`, 4}, {503, []string{"two", "deux"}, "bad", 2}}
	r := bytes.NewReader(nil)
	br := bufio.NewReader(r)
	req := &http.Request{Method: "POST"}
	var owner nopOwner
	var lent Lent
	buf := make([]byte, 64)
	i := 0
	allocs := testing.AllocsPerRun(100, func() {
		k := i % 2
		i++
		r.Reset(answers[k])
		br.Reset(r)
		resp, err := ReadResponseIn(br, req, 0, owner, &lent)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := io.ReadFull(resp.Body, buf[:len(want[k].body)])
		if resp.StatusCode != want[k].code || !slices.Equal(resp.Header["X-N"], want[k].n) || string(buf[:n]) != want[k].body || len(resp.Header) != want[k].fields {
			t.Fatalf("response %d: %d %v %q", k, resp.StatusCode, resp.Header, buf[:n])
		}
		resp.Body.Close()
		lent.Reset()
	})
	if allocs != 0 {
		t.Errorf("allocations = %v, want 0", allocs)
	}
}
