//go:build unix

package transport_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/race"
	"github.com/fusiongo/transport/internal/testsupport/rawhttp"
)

// boundSettings are the time bounds a call runs under, alone and together,
// none of which passes on the calls measured: each costs a sockets:h1 call
// no more than the idle targets (settings_allocs_test.go).
var boundSettings = []idleSetting{
	{name: "request_timeout", edit: func(s *env.Settings) { s.RequestTimeout = 20 * time.Second }},
	{name: "deadline+request_timeout", deadline: true, edit: func(s *env.Settings) { s.RequestTimeout = 20 * time.Second }},
	{name: "header_timeout+request_timeout", edit: func(s *env.Settings) {
		s.HeaderTimeout = 20 * time.Second
		s.RequestTimeout = 20 * time.Second
	}},
	{name: "deadline+header_timeout+request_timeout", deadline: true, edit: func(s *env.Settings) {
		s.HeaderTimeout = 20 * time.Second
		s.RequestTimeout = 20 * time.Second
	}},
	// The production set but dedupe (whose idle cost is its own).
	{name: "production-without-dedupe", deadline: true, edit: func(s *env.Settings) {
		productionSet(s)
		s.Dedupe = env.Disabled
	}},
}

// TestIdleBoundAllocs: request_timeout, header_timeout and the caller's
// deadline, alone and together, cost a sockets:h1 PostFunc at most 3
// allocations and 256 B, and a Post at most 4 allocations more than a
// bare one: the request bound makes no context, timer or goroutine of its
// own while it does not pass (internal/bound: the request context made
// lazily; the h1 engine keeps the bound on its connection's timer).
func TestIdleBoundAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates, and drops pooled items")
	}
	srv, err := rawhttp.Start(benchAnswer)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var buf []byte
	read := func(resp *http.Response) error { return rawhttp.ReadBody(resp, nil, &buf, len(benchAnswer)) }
	posts := func(t *testing.T, st idleSetting) float64 {
		inv, ctx := settingInvoker(t, pathH1, srv.URL()+"/graphql", st)
		allocs, _ := allocsPerCall(200, 2000, func() {
			resp, err := inv.Post(ctx, "products", benchQuery)
			if err := rawhttp.ReadBody(resp, err, &buf, len(benchAnswer)); err != nil {
				t.Fatal(err)
			}
		})
		return allocs
	}
	barePost := posts(t, idleSetting{name: "none"})
	for _, st := range boundSettings {
		t.Run(st.name, func(t *testing.T) {
			inv, ctx := settingInvoker(t, pathH1, srv.URL()+"/graphql", st)
			allocs, bytes := allocsPerCall(200, 2000, func() {
				if err := inv.PostFunc(ctx, "products", benchQuery, read); err != nil {
					t.Fatal(err)
				}
			})
			if allocs > maxIdlePostFuncAllocs || bytes > maxIdlePostFuncBytes {
				t.Errorf("PostFunc: %.1f allocations, %.0f B a call; want at most %d and %d", allocs, bytes, maxIdlePostFuncAllocs, maxIdlePostFuncBytes)
			}
			post := posts(t, st)
			if post > barePost+maxIdlePostExtra {
				t.Errorf("Post: %.1f allocations a call; want at most %.0f (the bare Post's %.0f + %d)", post, barePost+maxIdlePostExtra, barePost, maxIdlePostExtra)
			}
			t.Logf("PostFunc %.1f allocs %.0f B; Post %.1f allocs (bare %.0f)", allocs, bytes, post, barePost)
		})
	}
}
