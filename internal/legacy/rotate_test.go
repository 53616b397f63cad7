package legacy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// newTestRotator returns a rotator with the given handler lifetime (0: it
// never rotates) and proxy function (nil: direct), closed when the test
// ends.
func newTestRotator(t *testing.T, lifetime time.Duration, proxy func(*http.Request) (*url.URL, error)) *rotator {
	t.Helper()
	r := newRotator(&key{lifetime: lifetime}, proxy, discard)
	t.Cleanup(r.close)
	return r
}

// TestRotation: once the handler lifetime has passed, the next request goes
// to a new generation, on a new connection, and the retired generation
// closes its idle connection. With a lifetime of 1ns every request
// rotates; with none, or one not reached, every request shares one
// connection.
func TestRotation(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lifetime time.Duration
		rotates  bool
	}{
		{"every request rotates", time.Nanosecond, true},
		{"handler_lifetime off", 0, false},
		{"lifetime not reached", time.Hour, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newConnServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
			r := newTestRotator(t, tc.lifetime, nil)
			var remotes []string
			for i := range 3 {
				remote, body := get(t, r, srv.URL)
				if body != "ok" {
					t.Fatalf("request %d: body = %q", i, body)
				}
				remotes = append(remotes, remote)
				if i == 0 {
					continue
				}
				prev := remotes[i-1]
				if !tc.rotates {
					if remote != prev {
						t.Errorf("request %d came from %s, request %d from %s: want one connection", i-1, prev, i, remote)
					}
					if srv.isClosed(prev) {
						t.Errorf("connection %s closed without a rotation", prev)
					}
					continue
				}
				if remote == prev {
					t.Errorf("requests %d and %d both came from %s: want a new generation's connection", i-1, i, remote)
				}
				// The request that rotated retired the previous generation,
				// whose connection was idle.
				srv.waitClosed(t, prev, "the retired generation's idle connection")
			}
			if srv.isClosed(remotes[2]) {
				t.Errorf("the current generation's connection %s closed", remotes[2])
			}
		})
	}
}

// TestRotationBusy: a generation retired while a response body is being
// read keeps that connection until the body ends, then closes it.
func TestRotationBusy(t *testing.T) {
	release := make(chan struct{})
	srv := newConnServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/slow" {
			io.WriteString(w, "ok")
			return
		}
		io.WriteString(w, "a")
		w.(http.Flusher).Flush()
		select {
		case <-release:
			io.WriteString(w, "b")
		case <-r.Context().Done():
		}
	})
	r := newTestRotator(t, time.Nanosecond, nil)

	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/slow", nil)
	resp, err := r.RoundTrip(req)
	if err != nil {
		t.Fatalf("slow request: %v", err)
	}
	defer resp.Body.Close()
	slow := resp.Header.Get("X-Remote")
	first := make([]byte, 1)
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "a" {
		t.Fatalf("first byte = %q, %v", first, err)
	}

	// This request rotates: the slow request's generation is retired
	// with its connection busy.
	fast, _ := get(t, r, srv.URL+"/fast")
	if fast == slow {
		t.Fatalf("the request after the rotation used the busy connection %s", slow)
	}
	if srv.isClosed(slow) {
		t.Fatalf("retiring the generation closed the busy connection %s", slow)
	}

	close(release)
	rest, err := io.ReadAll(resp.Body)
	if err != nil || string(rest) != "b" {
		t.Fatalf("rest of the body on the retired generation = %q, %v; want %q, nil", rest, err, "b")
	}
	srv.waitClosed(t, slow, "the retired generation's connection, once its body was read")
	if srv.isClosed(fast) {
		t.Errorf("the current generation's connection %s closed", fast)
	}
}

// TestRotationRace: a request that took a generation just before it was
// retired, and reached the transport after the retirement (so net/http had
// already forgotten CloseIdleConnections), closes its connection when its
// body ends, as the last request in flight on a retired generation.
func TestRotationRace(t *testing.T) {
	srv := newConnServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.URL.Path) })
	inProxy := make(chan struct{}) // the racing request holds its generation
	resume := make(chan struct{})  // closed once a later request retired it
	// net/http asks Proxy for every request before it looks for a
	// connection: holding the racing request there puts the retirement
	// between the rotator's choice of generation and the transport's use
	// of it.
	proxy := func(req *http.Request) (*url.URL, error) {
		if req.URL.Path == "/race" {
			close(inProxy)
			<-resume
		}
		return nil, nil
	}
	r := newTestRotator(t, time.Nanosecond, proxy)

	type result struct {
		resp *http.Response
		err  error
	}
	results := make(chan result, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/race", nil)
		resp, err := r.RoundTrip(req)
		results <- result{resp, err}
	}()
	<-inProxy
	fast, _ := get(t, r, srv.URL+"/fast") // rotates: retires the racing request's generation
	close(resume)
	res := <-results
	if res.err != nil {
		t.Fatalf("racing request: %v", res.err)
	}
	defer res.resp.Body.Close()
	remote := res.resp.Header.Get("X-Remote")
	if remote == fast {
		t.Fatalf("the racing request used the current generation's connection %s", fast)
	}
	// Read the body to its end and leave it open: reaching io.EOF ends the
	// request, as Close would.
	if b, err := io.ReadAll(res.resp.Body); err != nil || string(b) != "/race" {
		t.Fatalf("racing request: body %q, error %v", b, err)
	}
	srv.waitClosed(t, remote, "the racing request's connection on a retired generation")
}

// TestRetiredDialClosed: a background dial that ends after its
// generation was retired with no request left on it is closed at once
// (the server sees it close) instead of staying idle for good; while a
// request is on the generation, a dial keeps its connection.
func TestRetiredDialClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	closed := make(chan struct{}, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				io.Copy(io.Discard, c) // returns when the client closes
				c.Close()
				closed <- struct{}{}
			}()
		}
	}()
	r := newTestRotator(t, 0, nil)
	g := r.cur.Load()

	g.inflight.Add(1) // a request on the generation: its dial keeps the connection
	g.retire()
	c, err := g.dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial with a request in flight: %v", err)
	}
	g.inflight.Add(-1)
	c.Close()
	<-closed

	if c, err := g.dial(context.Background(), "tcp", ln.Addr().String()); !errors.Is(err, errRetiredDial) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("dial after the last request of a retired generation: %v, want errRetiredDial", err)
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the connection dialled after retirement was not closed")
	}
}

// TestRetiredClosesEachRequestsConnection: a request that took a
// generation just before it was retired (the rotator handed it out, then
// rotated) asks its transport for a connection after the retirement,
// which makes net/http keep connections that turn idle again; when that
// request ends, its connection closes, while another request on the
// generation is still being read: a retired generation's connections do
// not wait for its last request.
func TestRetiredClosesEachRequestsConnection(t *testing.T) {
	srv := newConnServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	r := newTestRotator(t, 0, nil)
	g := r.cur.Load()

	first, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	slow, err := g.roundTrip(first)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Body.Close() // read last: it keeps g's count above zero meanwhile
	r.mu.Lock()
	r.rotateLocked()
	r.mu.Unlock()

	remote, _ := get(t, roundTripFunc(g.roundTrip), srv.URL)
	srv.waitClosed(t, remote, "the racing request's connection, after it ended on the retired generation")
	if slowRemote := slow.Header.Get("X-Remote"); srv.isClosed(slowRemote) {
		t.Error("the connection of the request still being read was closed")
	}
}

// roundTripFunc is a RoundTripper of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
