//go:build unix

package transport_test

import (
	"net/http"
	"runtime"
	"testing"

	"github.com/fusiongo/transport/internal/testsupport/race"
	"github.com/fusiongo/transport/internal/testsupport/rawhttp"
)

// Idle-cost targets of a call on sockets:h1 under a setting that does not
// act on it (docs/benchmarks.md, "What a setting costs a call"): PostFunc
// at most 3 allocations and 256 bytes, Post at most 4 allocations more
// than a bare Post.
const (
	maxIdlePostFuncAllocs = 3
	maxIdlePostFuncBytes  = 256
	maxIdlePostExtra      = 4
)

// allocsPerCall runs call warm times, then n times, and returns the
// allocations and bytes per call of the n, rounded down as
// testing.AllocsPerRun rounds them: a background goroutine's rare
// allocation (a pool's timer) is not the call's.
func allocsPerCall(warm, n int, call func()) (allocs, bytes float64) {
	for range warm {
		call()
	}
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	for range n {
		call()
	}
	runtime.ReadMemStats(&b)
	return float64((b.Mallocs - a.Mallocs) / uint64(n)), float64((b.TotalAlloc - a.TotalAlloc) / uint64(n))
}

// TestIdleSettingAllocs: each setting that users run, the time bounds
// alone and together (boundSettings), and the production set, cost a
// sockets:h1 call they do not act on no more than the targets above
// (allocations are exact: no clock is read).
func TestIdleSettingAllocs(t *testing.T) {
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
	for _, st := range append(idleSettings[:len(idleSettings):len(idleSettings)], boundSettings...) {
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
			t.Logf("PostFunc %.1f allocs %.0f B; Post %.1f allocs", allocs, bytes, post)
		})
	}
}
