package schemas

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
)

// CallsPath is where each server that Start (or the replay package's)
// runs answers a GET with the number of requests its schema's endpoint
// (Path) has received since it started, in decimal. A benchmark reads it
// to count the source schema calls that reached the schema, as against
// those its gateway made: a response cache answers some of those itself.
const CallsPath = "/debug/calls"

// endpoint is a schema's handler as a server serves it at Path: counted,
// and with Options.CacheControl on every answer.
type endpoint struct {
	h            http.Handler // immutable
	cacheControl []string     // immutable; nil: none
	calls        atomic.Int64 // requests received
}

func (e *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.calls.Add(1)
	if e.cacheControl != nil {
		// Set first, so that it is on every answer the handler writes; a
		// shared slice, so that it costs no allocation.
		w.Header()["Cache-Control"] = e.cacheControl
	}
	e.h.ServeHTTP(w, r)
}

// Mount registers h on mux at Path, counted and, if cacheControl is not
// empty, with a Cache-Control header of that value on every answer, and
// the count at CallsPath.
func Mount(mux *http.ServeMux, h http.Handler, cacheControl string) {
	e := &endpoint{h: h}
	if cc := strings.TrimSpace(cacheControl); cc != "" {
		e.cacheControl = []string{cc}
	}
	mux.Handle(Path, e)
	mux.HandleFunc("GET "+CallsPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(strconv.AppendInt(nil, e.calls.Load(), 10))
	})
}

// Calls sums the counts of the schemas whose endpoints urls lists (each
// ending in Path), read from their CallsPath with client.
func Calls(ctx context.Context, client *http.Client, urls []string) (int64, error) {
	var sum int64
	for _, u := range urls {
		n, err := calls(ctx, client, strings.TrimSuffix(u, Path)+CallsPath)
		if err != nil {
			return 0, fmt.Errorf("source schema calls at %s: %w", u, err)
		}
		sum += n
	}
	return sum, nil
}

func calls(ctx context.Context, client *http.Client, url string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64))
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d: %q", resp.StatusCode, b)
	}
	return strconv.ParseInt(string(b), 10, 64)
}
