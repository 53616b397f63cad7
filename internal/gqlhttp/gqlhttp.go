// Package gqlhttp builds GraphQL-over-HTTP POST requests, the one way both
// paths' Invoker.Post sends.
package gqlhttp

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
)

// The media types of a GraphQL-over-HTTP POST, shared by every request:
// net/http only reads header values.
var (
	contentType = []string{"application/json; charset=utf-8"}
	accept      = []string{"application/graphql-response+json; charset=utf-8, application/json; charset=utf-8"}
)

// Template returns the part of a POST to u that every request shares. A
// request is made from it with WithContext, which copies it.
func Template(u *url.URL) *http.Request {
	return &http.Request{Method: http.MethodPost, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Host: u.Host}
}

// Header returns the headers of a GraphQL-over-HTTP POST, with room for
// extra more.
func Header(extra int) http.Header {
	h := make(http.Header, 2+extra)
	h["Content-Type"] = contentType
	h["Accept"] = accept
	return h
}

// SetBody hands body to net/http as a *bytes.Reader, so that the headers
// and a small body leave in one write (golang/go#22088). With replayable,
// GetBody is set too, for a request that may be sent again (redirects,
// retries, a refused HTTP/2 stream).
func SetBody(req *http.Request, body []byte, replayable bool) {
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	if replayable {
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
}

// CloseBody closes a request body that the caller handed over, as
// http.Client.Do does on every error.
func CloseBody(req *http.Request) {
	if req != nil && req.Body != nil && req.Body != http.NoBody {
		req.Body.Close()
	}
}
