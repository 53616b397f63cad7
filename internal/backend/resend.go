package backend

import (
	"errors"
	"net/http"
	"strings"

	"github.com/fusiongo/transport/fault"
)

// AttemptError is what a Pool returns for an attempt whose failure
// may allow sending it again: on a connection that had carried an earlier
// request (Reused: the server may have closed it just as this request
// left), or on any connection, fresh ones included, before a byte of the
// request was written (Unsent). Resend reads it; the request path unwraps
// it before a caller sees the error.
type AttemptError struct {
	Err error
	// Reused: the connection had carried an earlier request.
	Reused bool
	// Unsent: no byte of the request was written (the Pool counted
	// the bytes on its connection).
	Unsent bool
}

func (e *AttemptError) Error() string { return e.Err.Error() }
func (e *AttemptError) Unwrap() error { return e.Err }

// Tries counts one request's attempts by the reason each was sent again.
// Its zero value is a request that was sent once.
type Tries struct {
	moved, unsent, refused, stale int
}

// Reason says why a request is sent again.
type Reason int

const (
	// NoResend: the error goes to the caller.
	NoResend Reason = iota
	// Moved: the Pool was drained before anything was sent (a reload
	// replaced it); the request goes to the schema's current Pool.
	Moved
	// Unsent: the attempt failed before any byte of the request was
	// written; any method may go again.
	Unsent
	// Refused: the server refused the HTTP/2 stream before processing it
	// (RFC 9113, section 8.7); any method may go again.
	Refused
	// Stale: a reused connection failed before any answer; an idempotent
	// request may go again on another connection, as net/http does.
	Stale
)

// Bounds of Tries: how often one request is sent again, per reason.
const (
	// MaxMoves bounds how often a request follows its schema to a new
	// Pool. Each move needs a newer configuration, so the loop ends;
	// the bound guards against reloads that never stop.
	MaxMoves = 1000
	// MaxRefused bounds the retries of a refused HTTP/2 stream.
	MaxRefused = 3
	// MaxUnsent bounds the retries of a request that was never written.
	MaxUnsent = 3
	// MaxStale: a request is sent again once after a stale connection.
	MaxStale = 1
)

// Resend is the one place that decides whether a request that failed on a
// Pool may be sent again, and why; it counts the attempt in t. It is
// modelled on net/http's Transport (shouldRetryRequest): a request goes
// again only when the server cannot have acted on it, and only when its
// body can be read again. The retry middleware (configured by retry.*) is
// separate: it repeats whole queries after an answer or an error, by
// policy.
//
// The reasons, in order:
//   - the caller gave up (its context is done): never;
//   - the Pool was drained before sending (ErrDrained): any request,
//     up to MaxMoves times, since nothing was written;
//   - the header timeout passed: never, the server may be working on it;
//   - no byte of the request was written (AttemptError.Unsent): any
//     request, up to MaxUnsent times, as net/http does for its
//     nothingWrittenError;
//   - the server refused the HTTP/2 stream: any request, up to MaxRefused;
//   - a reused connection failed (AttemptError.Reused): a request with an
//     idempotent method (RFC 9110, section 9.2.2) or an Idempotency-Key
//     (or X-Idempotency-Key) header, once. A POST without a key is never sent twice: it may be a mutation
//     the server already ran.
//
// In every case but the first two, the body must be replayable: no body,
// http.NoBody, or GetBody set.
func Resend(req *http.Request, err error, t *Tries) Reason {
	if err == nil || req.Context().Err() != nil {
		return NoResend
	}
	if errors.Is(err, ErrDrained) {
		if t.moved >= MaxMoves {
			return NoResend
		}
		t.moved++
		return Moved
	}
	var hte *fault.HeaderTimeoutError
	if errors.As(err, &hte) || !replayableBody(req) {
		return NoResend
	}
	var ae *AttemptError
	isAttempt := errors.As(err, &ae)
	if isAttempt && ae.Unsent {
		if t.unsent >= MaxUnsent {
			return NoResend
		}
		t.unsent++
		return Unsent
	}
	if refusedStream(err) {
		if t.refused >= MaxRefused {
			return NoResend
		}
		t.refused++
		return Refused
	}
	if isAttempt && ae.Reused && idempotent(req) && t.stale < MaxStale {
		t.stale++
		return Stale
	}
	return NoResend
}

// Cause returns err without the AttemptError around it, as callers see it.
func Cause(err error) error {
	var ae *AttemptError
	if errors.As(err, &ae) && ae == err {
		return ae.Err
	}
	return err
}

// refusedStream reports an HTTP/2 REFUSED_STREAM from the server. net/http
// does not export its bundled HTTP/2 error types, so the code is matched in
// the error text.
func refusedStream(err error) bool {
	return strings.Contains(err.Error(), "REFUSED_STREAM")
}

// idempotent reports whether req may be sent twice by its method or an
// Idempotency-Key header, as net/http decides.
func idempotent(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	// net/http's isReplayable reads both spellings.
	_, ok := req.Header["Idempotency-Key"]
	_, xok := req.Header["X-Idempotency-Key"]
	return ok || xok
}

func replayableBody(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// Rewind returns req with a fresh body, for sending again. The caller has
// checked with Resend that the body can be read again.
func Rewind(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	if req.GetBody == nil {
		return nil, errors.New("the request body cannot be sent again (no GetBody)")
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	r2 := *req
	r2.Body = body
	return &r2, nil
}
