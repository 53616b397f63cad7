// Package gqlhttp builds GraphQL-over-HTTP POST requests, the one way both
// paths' Invoker.Post sends.
package gqlhttp

import (
	"net/http"
	"net/url"
	"strings"
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

// ResetHeader empties h, a header map that Header made for an earlier
// Post, and sets in it what Header sets, so that the map serves another
// Post without an allocation.
func ResetHeader(h http.Header) {
	clear(h)
	h["Content-Type"] = contentType
	h["Accept"] = accept
}

// CloseBody closes a request body that the caller handed over, as
// http.Client.Do does on every error.
func CloseBody(req *http.Request) {
	if req != nil && req.Body != nil && req.Body != http.NoBody {
		req.Body.Close()
	}
}

// AsksUpgrade reports whether req asks for a protocol upgrade: an Upgrade
// header, and the token "upgrade" in Connection (RFC 9110, section 7.8), as
// a WebSocket client's handshake does.
func AsksUpgrade(req *http.Request) bool {
	if len(req.Header["Upgrade"]) == 0 {
		return false
	}
	for _, v := range req.Header["Connection"] {
		for token := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(token), "upgrade") {
				return true
			}
		}
	}
	return false
}
