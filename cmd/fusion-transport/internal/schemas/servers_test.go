package schemas

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The lifetime of Servers: latency, and Close with requests under way.

func TestLatency(t *testing.T) {
	const latency = 40 * time.Millisecond
	s, c := start(t, Options{Latency: latency})
	begin := time.Now()
	got := send(t, c, http.MethodPost, s.URLs["products"], `{"query":"{ topProducts(first: 1) { upc } }"}`, nil)
	if elapsed := time.Since(begin); elapsed < latency {
		t.Errorf("answered after %v, want at least %v", elapsed, latency)
	}
	if got.status != http.StatusOK {
		t.Errorf("status %d", got.status)
	}
}

// TestLatencyClientGone wants a waiting handler to give up when its client
// does, so that Close does not wait out the latency.
func TestLatencyClientGone(t *testing.T) {
	s, err := Start(Options{Latency: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URLs["accounts"], strings.NewReader(`{"query":"{ users { id } }"}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = (&http.Client{Transport: tr}).Do(req)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error = %v, want the deadline", err)
	}
	tr.CloseIdleConnections()
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close still waiting after 10s")
	}
	goleak.VerifyNone(t)
}

// TestCloseDuringLatency closes the servers while a request waits out its
// latency: Close ends the connection, and so the wait.
func TestCloseDuringLatency(t *testing.T) {
	s, err := Start(Options{Latency: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	wrote := make(chan struct{})
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { close(wrote) },
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URLs["reviews"], strings.NewReader(`{"query":"{ _service { sdl } }"}`))
	if err != nil {
		t.Fatal(err)
	}
	answered := make(chan int, 1)
	go func() {
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	<-wrote
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	// The handler may not have started before Close: then the request is
	// refused with 503 instead.
	if status := <-answered; status != 0 && status != http.StatusServiceUnavailable {
		t.Errorf("the request got status %d; want the connection closed or 503", status)
	}
	tr.CloseIdleConnections()
	goleak.VerifyNone(t)
}

func TestCloseLeavesNoGoroutine(t *testing.T) {
	s, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	c := &http.Client{Transport: tr}
	for _, name := range Names {
		got := send(t, c, http.MethodPost, s.URLs[name], `{"query":"{ _service { sdl } }"}`, nil)
		if got.status != http.StatusOK {
			t.Errorf("%s: status %d", name, got.status)
		}
	}
	// The client keeps its connections open: Close must end the server side
	// of them.
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	tr.CloseIdleConnections()
	goleak.VerifyNone(t)
}

// TestCacheControlAndCalls: with Options.CacheControl every answer of a
// server carries it (errors too), without it none; each server counts the
// requests its schema received at CallsPath, its own alone.
func TestCacheControlAndCalls(t *testing.T) {
	for _, cc := range []string{"", "public, max-age=60"} {
		t.Run("Cache-Control="+cc, func(t *testing.T) {
			s, c := start(t, Options{CacheControl: cc})
			query := `{"query":"{ topProducts(first: 1) { upc } }"}`
			for i, body := range []string{query, query, `{"query":"{ nope }"}`} {
				got := send(t, c, http.MethodPost, s.URLs["products"], body, nil)
				if h := got.header.Get("Cache-Control"); h != cc {
					t.Errorf("answer %d (%d): Cache-Control %q, want %q", i, got.status, h, cc)
				}
			}
			for name, want := range map[string]string{"products": "3", "accounts": "0"} {
				got := send(t, c, http.MethodGet, strings.TrimSuffix(s.URLs[name], Path)+CallsPath, "", nil)
				if got.status != http.StatusOK || got.body != want {
					t.Errorf("%s %s: %d %q, want %q", name, CallsPath, got.status, got.body, want)
				}
			}
			if n, err := Calls(context.Background(), c, []string{s.URLs["products"], s.URLs["accounts"]}); n != 3 || err != nil {
				t.Errorf("Calls = %d, %v; want 3", n, err)
			}
		})
	}
}
