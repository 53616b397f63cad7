package answerdiff

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/fusiongo/transport/answer"
)

// Capture reads (up to max bytes) and closes resp's body, as one side's
// answer; Truncated says whether there was more. resp and err are what a
// sender returned; elapsed is the time until it returned, to which Capture
// adds the time it spends reading the body. The headers are copied as they
// are: a comparison redacts what it publishes.
func Capture(resp *http.Response, err error, elapsed time.Duration, max int64) (a answer.Answer) {
	a.Elapsed = elapsed
	if err != nil {
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		a.Err = err.Error()
		return a
	}
	if resp == nil {
		a.Err = "the Invoker returned neither a response nor an error"
		return a
	}
	a.Status = resp.StatusCode
	a.Header = resp.Header.Clone()
	a.Uncompressed = resp.Uncompressed
	recordRedirects(&a, resp)
	if resp.Body != nil {
		start := time.Now()
		a.Body, a.Truncated, err = ReadCapped(resp.Body, max)
		resp.Body.Close()
		a.Elapsed += time.Since(start)
		if err != nil {
			a.Err = fmt.Sprintf("reading body: %v", err)
		}
	}
	return a
}

// recordRedirects fills in where the answer came from (redacted) and the
// redirects that led there. An http.Client records them: each request it
// makes for a redirect carries the response that caused it
// (Request.Response).
func recordRedirects(a *answer.Answer, resp *http.Response) {
	if resp.Request == nil || resp.Request.URL == nil {
		return
	}
	a.FinalURL = resp.Request.URL.Redacted()
	first := resp.Request
	var hops []answer.Redirect
	for first.Response != nil && first.Response.Request != nil {
		hops = append(hops, answer.Redirect{Status: first.Response.StatusCode, Location: first.Response.Header.Get("Location")})
		first = first.Response.Request
	}
	for i, j := 0, len(hops)-1; i < j; i, j = i+1, j-1 {
		hops[i], hops[j] = hops[j], hops[i]
	}
	a.Redirects = hops
	if first.URL != nil {
		a.URL = first.URL.Redacted()
	}
}

// ReadCapped reads r up to limit bytes and reports whether there was more.
func ReadCapped(r io.Reader, limit int64) (body []byte, truncated bool, err error) {
	body, err = io.ReadAll(io.LimitReader(r, limit+1))
	if int64(len(body)) > limit {
		return body[:limit], true, err
	}
	return body, false, err
}
