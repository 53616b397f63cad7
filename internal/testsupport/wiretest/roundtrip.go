package wiretest

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
)

// HandlerTransport is an http.RoundTripper that serves each request with
// Handler in the process, through httptest.NewRecorder: no connection, no
// server.
type HandlerTransport struct {
	Handler http.Handler
	calls   atomic.Int32
}

// RoundTrip serves req with Handler and returns the recorded response; it
// closes req's body.
func (ht *HandlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ht.calls.Add(1)
	rec := httptest.NewRecorder()
	ht.Handler.ServeHTTP(rec, req)
	if req.Body != nil {
		req.Body.Close()
	}
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}

// Calls returns how many requests RoundTrip has served.
func (ht *HandlerTransport) Calls() int { return int(ht.calls.Load()) }

// RoundTripFunc is an http.RoundTripper that is a function.
type RoundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f(req).
func (f RoundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
