package wiretest

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"
)

// BarrierHandler holds every request that carries an X-Barrier header
// until n such requests have arrived (or 5s passed, or the client went
// away), so that n concurrent requests are on n connections at once; then
// it answers {"data":{}}. A request without the header is answered at once.
func BarrierHandler(n int) http.HandlerFunc {
	var mu sync.Mutex
	arrived, all := 0, make(chan struct{})
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Barrier") != "" {
			mu.Lock()
			if arrived++; arrived == n {
				close(all)
			}
			mu.Unlock()
			select {
			case <-all:
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}
		io.WriteString(w, `{"data":{}}`)
	}
}

// StreamingHandler answers 200 and writes a line "chunk i" every 100ms for
// a second, flushing each, unless the client goes away.
func StreamingHandler(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusOK)
	for i := range 10 {
		fmt.Fprintf(w, "chunk %d\n", i)
		w.(http.Flusher).Flush()
		select {
		case <-time.After(100 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
	}
}

// CompressingHandler answers payload with the content coding the last
// element of the request path names (gzip, zstd) if the request's
// Accept-Encoding lists it, else plainly; a coding it does not know is a
// 400.
func CompressingHandler(payload string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		coding := path.Base(r.URL.Path)
		if !slices.Contains(strings.Split(strings.ReplaceAll(r.Header.Get("Accept-Encoding"), " ", ""), ","), coding) {
			io.WriteString(w, payload)
			return
		}
		w.Header().Set("Content-Encoding", coding)
		var enc io.WriteCloser
		switch coding {
		case "gzip":
			enc = gzip.NewWriter(w)
		case "zstd":
			enc, _ = zstd.NewWriter(w)
		default:
			http.Error(w, "unknown coding "+coding, http.StatusBadRequest)
			return
		}
		io.WriteString(enc, payload)
		enc.Close()
	}
}

// HoldHandler sends nothing, not even the response headers, until release
// is closed or the client goes away; then it returns without writing (an
// empty 200, if the client still listens). Close release before the server
// closes: httptest.Server.Close waits for the handlers still running.
func HoldHandler(release <-chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
}
