package legacy_test

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/legacy"
)

// TestNewErrors: New names the key it refuses or finds wrong.
func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    legacy.Config
		want string
	}{
		{"per-schema key", legacy.Config{Settings: env.Settings{HeaderTimeout: time.Second}}, "header_timeout is not a setting of the shared transport"},
		{"sockets key", legacy.Config{Settings: env.Settings{Engine: env.EngineH1}}, "engine"},
		{"bad value", legacy.Config{Settings: env.Settings{MaxConnsPerHost: -5}}, "max_conns_per_host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lt, err := legacy.New(tc.c)
			if err == nil {
				lt.Close()
				t.Fatal("New succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v; want it to name %q", err, tc.want)
			}
		})
	}
}

// TestSharedAndClosed: requests to two hosts share the transport, each
// reuses its warm connection, and after Close a request fails with
// fault.ErrClosed, unsent, and the idle connections are closed.
func TestSharedAndClosed(t *testing.T) {
	type counted struct {
		*httptest.Server
		opened, hits atomic.Int64
		closed       chan struct{}
	}
	start := func() *counted {
		c := &counted{closed: make(chan struct{}, 16)}
		c.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { c.hits.Add(1) }))
		c.Config.ConnState = func(_ net.Conn, st http.ConnState) {
			switch st {
			case http.StateNew:
				c.opened.Add(1)
			case http.StateClosed:
				c.closed <- struct{}{}
			}
		}
		c.Start()
		t.Cleanup(c.Close)
		return c
	}
	a, b := start(), start()
	lt, err := legacy.New(legacy.Config{LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	client := lt.Client()
	for range 3 {
		for _, s := range []*counted{a, b} {
			resp, err := client.Get(s.URL)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	for i, s := range []*counted{a, b} {
		if s.opened.Load() != 1 || s.hits.Load() != 3 {
			t.Errorf("server %d: %d connections, %d requests; want 1 warm connection for 3 requests", i, s.opened.Load(), s.hits.Load())
		}
	}
	lt.Close()
	for i, s := range []*counted{a, b} {
		select {
		case <-s.closed:
		case <-time.After(10 * time.Second):
			t.Fatalf("server %d: the idle connection was not closed by Close", i)
		}
	}
	if _, err := client.Get(a.URL); !errors.Is(err, fault.ErrClosed) {
		t.Fatalf("after Close: %v, want fault.ErrClosed", err)
	}
	if n := a.hits.Load(); n != 3 {
		t.Errorf("server saw %d requests, want 3", n)
	}
}
