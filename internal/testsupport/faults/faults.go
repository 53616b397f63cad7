// Package faults is a source schema that misbehaves on purpose: one loopback
// server that answers each path /fault/<name> with the fault of that name,
// written byte by byte on a raw connection where net/http's server would not
// produce it (resets, wrong framing, headers that never come).
//
// Tests use it to check what each transport path makes of a broken source
// schema; `fusion-transport schemas --faults` can expose the same faults on
// one port for manual runs.
//
//	srv, err := faults.Start(faults.Options{})
//	if err != nil { ... }
//	defer srv.Close()
//	resp, err := http.Post(srv.URL(faults.ServerError), "application/json", body)
//	// resp.StatusCode == 503
//
// Two faults cannot live on the shared port and get their own address:
// Refused (a port with no listener) and TLSHandshake (a TLS listener whose
// certificate no client trusts). Server.URL hides the difference.
package faults

// Fault names one way a source schema fails. Its value is the last segment
// of the fault's path, /fault/<value>.
type Fault string

// The faults. Each doc says what goes over the wire; "the request" is read
// in full (headers and body) before the fault starts, so that a reset never
// races the client's write.
const (
	// None is the control: 200 with a small JSON body, keep-alive. A client
	// that survived a fault can check its connections still work.
	None Fault = "none"

	// Refused is an address where nothing listens: connecting fails with
	// ECONNREFUSED.
	Refused Fault = "refused"

	// ResetBeforeHeaders reads the request, then closes the connection with
	// a TCP RST (SO_LINGER 0) before writing a byte.
	ResetBeforeHeaders Fault = "reset-before-headers"

	// ResetMidBody sends 200 with Content-Length: 1024 and the first 100
	// bytes of the body, waits until the client has acknowledged them, then
	// resets the connection.
	ResetMidBody Fault = "reset-mid-body"

	// NoHeaders reads the request and never answers; the connection stays
	// open until the client closes it or the server closes.
	NoHeaders Fault = "no-headers"

	// BodyStall sends 200 with Content-Length: 1024 and the first 16 bytes
	// of the body, then sends nothing more until the client closes the
	// connection or the server closes.
	BodyStall Fault = "body-stall"

	// WrongContentLength sends 200 with Content-Length: 1024 but only 10
	// bytes of body, then closes the connection cleanly (FIN).
	WrongContentLength Fault = "wrong-content-length"

	// TruncatedChunked sends 200 with Transfer-Encoding: chunked, one whole
	// chunk and half of the next, then closes the connection cleanly (FIN):
	// the terminating zero-length chunk never comes.
	TruncatedChunked Fault = "truncated-chunked"

	// ServerError answers 503 Service Unavailable with a GraphQL error body,
	// keep-alive.
	ServerError Fault = "server-error"

	// TooManyRequests answers 429 Too Many Requests with Retry-After (see
	// Options.RetryAfter) and a GraphQL error body, keep-alive.
	TooManyRequests Fault = "too-many-requests"

	// RedirectLoop answers 307 Temporary Redirect to its own path, forever:
	// a client that follows redirects loops until its own limit.
	RedirectLoop Fault = "redirect-loop"

	// OversizedHeaders sends a status line and more header bytes than
	// net/http's client accepts by default (10 MiB, Transport's
	// MaxResponseHeaderBytes): see Options.HeaderBytes.
	OversizedHeaders Fault = "oversized-headers"

	// EndlessBody sends 200 with a chunked body that does not end: it
	// streams until the client goes away, the server closes, or
	// Options.EndlessCap bytes are sent, after which the connection is
	// closed without the terminating chunk.
	EndlessBody Fault = "endless-body"

	// TLSHandshake is a TLS listener whose certificate is self-signed and
	// generated at Start: no client trusts it, so the handshake fails. A
	// client that skips verification gets the faults of the plain port.
	TLSHandshake Fault = "tls-handshake"
)

// All lists every fault, None excluded, in the order of the constants.
var All = []Fault{
	Refused,
	ResetBeforeHeaders,
	ResetMidBody,
	NoHeaders,
	BodyStall,
	WrongContentLength,
	TruncatedChunked,
	ServerError,
	TooManyRequests,
	RedirectLoop,
	OversizedHeaders,
	EndlessBody,
	TLSHandshake,
}

// Path returns the URL path that serves f: /fault/<f>.
func (f Fault) Path() string { return "/fault/" + string(f) }

// known reports whether f is one of the faults or None.
func (f Fault) known() bool {
	if f == None {
		return true
	}
	for _, g := range All {
		if f == g {
			return true
		}
	}
	return false
}
