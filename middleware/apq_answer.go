package middleware

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/fusiongo/transport/internal/jsonscan"
)

// verdict is what an answer to a request by its hash says.
type verdict int

const (
	answered     verdict = iota // no refusal: the caller's answer
	notFound                    // PERSISTED_QUERY_NOT_FOUND
	notSupported                // PERSISTED_QUERY_NOT_SUPPORTED
	requestError                // another error raised before execution
)

// maxRefusalBytes bounds the answer judge reads: a refusal is a few
// hundred bytes, and a longer answer is passed on unread.
const maxRefusalBytes = 4 << 10

// judge tells whether resp refuses a request by its hash, and returns it
// with its body as readable as before. It looks at the body only when it
// can be a refusal: a status under 500 (a 5xx is the retry's and the
// breaker's), a JSON media type or none, and a Content-Length of at most
// maxRefusalBytes or none. Then it reads the body's first bytes: an answer
// that starts with data that is not null (most answers) is no refusal,
// and goes on unread but for them; any other is read whole, up to
// maxRefusalBytes, its connection given back at once, and judged.
func judge(resp *http.Response) (verdict, *http.Response) {
	if resp.StatusCode < 200 || resp.StatusCode >= 500 || resp.ContentLength > maxRefusalBytes || !jsonAnswer(resp.Header) {
		return answered, resp
	}
	pb := &peekedBody{rest: resp.Body}
	n, err := io.ReadFull(resp.Body, pb.head[:])
	head := pb.head[:n]
	resp.Body = pb
	switch {
	case err == nil && startsWithData(head):
		pb.r.Reset(head)
		return answered, resp
	case err != nil && err != io.EOF && err != io.ErrUnexpectedEOF:
		pb.r.Reset(head)
		pb.err = err
		return answered, resp
	}
	b := head
	whole := err != nil // the body ended within the head
	if !whole {
		var rest []byte
		rest, whole, err = readSmall(pb.rest, resp.ContentLength-int64(n))
		b = append(append(make([]byte, 0, n+len(rest)), head...), rest...)
	}
	pb.r.Reset(b)
	if !whole {
		pb.err = err // nil: the body goes on past maxRefusalBytes
		return answered, resp
	}
	pb.rest.Close()
	pb.rest = nil
	return verdictOf(b), resp
}

// startsWithData reports whether head, the start of a JSON answer, opens
// with a data member whose value is an object or an array: an answer that
// ran, never a refusal.
func startsWithData(head []byte) bool {
	i := jsonscan.SkipSpace(head, 0)
	if i == len(head) || head[i] != '{' {
		return false
	}
	i = jsonscan.SkipSpace(head, i+1)
	if !bytes.HasPrefix(head[i:], []byte(`"data"`)) {
		return false
	}
	i = jsonscan.SkipSpace(head, i+len(`"data"`))
	if i == len(head) || head[i] != ':' {
		return false
	}
	i = jsonscan.SkipSpace(head, i+1)
	return i < len(head) && (head[i] == '{' || head[i] == '[')
}

// jsonAnswer reports whether h declares a JSON answer
// (application/json, application/graphql-response+json), or no media
// type.
func jsonAnswer(h http.Header) bool {
	ct := h["Content-Type"]
	if len(ct) == 0 {
		return true
	}
	mt, _, _ := strings.Cut(ct[0], ";")
	mt = strings.TrimSpace(mt)
	return strings.EqualFold(mt, "application/json") || strings.EqualFold(mt, "application/graphql-response+json")
}

// readSmall reads body to its end if that comes within maxRefusalBytes
// (cl, if not negative, is its announced length). whole reports that it
// did; otherwise b is what was read and err the read's error, if any.
func readSmall(body io.Reader, cl int64) (b []byte, whole bool, err error) {
	n := maxRefusalBytes + 1
	if cl >= 0 {
		n = int(cl) + 1 // room to see the end
	}
	b = make([]byte, 0, n)
	for len(b) < cap(b) {
		m, err := body.Read(b[len(b):cap(b)])
		b = b[:len(b)+m]
		if err == io.EOF {
			return b, true, nil
		}
		if err != nil {
			return b, false, err
		}
	}
	return b, false, nil
}

// errorsMember is in every answer with errors, as JSON writes the key.
var errorsMember = []byte(`"errors"`)

// verdictOf is the verdict of b, an answer's whole body: a refusal needs
// errors and no data (absent or null); then an error coded or worded as
// PersistedQueryNotFound or PersistedQueryNotSupported says which, and
// otherwise the answer is a request error when no error is at a path.
func verdictOf(b []byte) verdict {
	if !bytes.Contains(b, errorsMember) {
		return answered // most answers: no decoding
	}
	var a struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Message    string          `json:"message"`
			Path       json.RawMessage `json:"path"`
			Extensions struct {
				Code json.RawMessage `json:"code"`
			} `json:"extensions"`
		} `json:"errors"`
	}
	if json.Unmarshal(b, &a) != nil || len(a.Errors) == 0 || !isNull(a.Data) {
		return answered
	}
	atPath := false
	for _, e := range a.Errors {
		switch code := string(e.Extensions.Code); {
		case code == `"PERSISTED_QUERY_NOT_FOUND"` || e.Message == "PersistedQueryNotFound":
			return notFound
		case code == `"PERSISTED_QUERY_NOT_SUPPORTED"` || e.Message == "PersistedQueryNotSupported":
			return notSupported
		}
		atPath = atPath || !isNull(e.Path)
	}
	if atPath {
		return answered
	}
	return requestError
}

// isNull reports whether a decoded member is absent or null.
func isNull(v json.RawMessage) bool { return len(v) == 0 || string(v) == "null" }

// peekedBody is an answer's body after judge read its start, r (over
// head, or a copy of the whole): then the rest, or err, the error that
// ended judge's read. rest is nil when r is the whole body. A data answer
// costs judge this one allocation.
type peekedBody struct {
	// All owned by the body's reader, as any response body's state.
	r    bytes.Reader  // over head, or a copy of the whole body
	head [32]byte      // the first bytes, read in place
	rest io.ReadCloser // the body as the transport gave it; nil once read whole
	err  error         // the error that ended judge's read, returned once r is read
}

func (b *peekedBody) Read(p []byte) (int, error) {
	if b.r.Len() > 0 {
		return b.r.Read(p)
	}
	switch {
	case b.err != nil:
		return 0, b.err
	case b.rest == nil:
		return 0, io.EOF
	}
	return b.rest.Read(p)
}

func (b *peekedBody) Close() error {
	if b.rest != nil {
		return b.rest.Close()
	}
	return nil
}
