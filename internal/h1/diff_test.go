package h1

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"maps"
	"net/http"
	"reflect"
	"testing"
)

// outcome is what a parse of one response did, as far as the caller of
// net/http's client can tell.
type outcome struct {
	headErr       error
	status        string
	code          int
	proto         string
	major, minor  int
	header        http.Header
	contentLength int64
	te            []string
	close         bool
	noBody        bool        // Body == http.NoBody
	trailerBefore http.Header // resp.Trailer before the body is read
	body          []byte
	bodyErr       error
	trailer       http.Header
	consumed      int // input bytes used: len(in) - unread - br.Buffered()
}

// summary is a one-line account of o, recorded beside each seed vector
// as what net/http does with it.
func (o *outcome) summary() string {
	if o.headErr != nil {
		return "refuse"
	}
	s := fmt.Sprintf("accept %d cl=%d close=%t body=%d", o.code, o.contentLength, o.close, len(o.body))
	if o.te != nil {
		s += " chunked"
	}
	if o.noBody {
		s += " nobody"
	}
	if o.bodyErr != nil {
		s += " bodyerr"
	}
	if o.trailer != nil {
		s += fmt.Sprintf(" trailer=%d", len(o.trailer))
	}
	return s + fmt.Sprintf(" consumed=%d", o.consumed)
}

// bufSize is the bufio.Reader size of the differential parses: net/http's
// Transport default (ReadBufferSize 4 KiB).
const bufSize = 4 << 10

// parseStd parses in as net/http's ReadResponse and drains the body.
func parseStd(in []byte, method string) *outcome {
	r := bytes.NewReader(in)
	br := bufio.NewReaderSize(r, bufSize)
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	o := &outcome{headErr: err}
	if err != nil {
		return o
	}
	o.fill(resp)
	o.body, o.bodyErr = io.ReadAll(resp.Body)
	resp.Body.Close()
	o.trailer = resp.Trailer
	o.consumed = len(in) - r.Len() - br.Buffered()
	return o
}

// doneOwner records BodyDone calls.
type doneOwner struct {
	calls int
	reuse bool
}

func (d *doneOwner) BodyDone(reuse bool) { d.calls++; d.reuse = reuse }

// parseH1 parses in with readOne (one response, as http.ReadResponse
// reads one; the Transport's 1xx loop is ReadResponse's and is tested
// against a real Transport instead) and drains the body. It also checks
// the Owner contract and returns a description of any breach.
func parseH1(in []byte, method string) (*outcome, string) {
	r := bytes.NewReader(in)
	br := bufio.NewReaderSize(r, bufSize)
	owner := &doneOwner{}
	resp, _, err := readOne(br, &http.Request{Method: method}, DefaultMaxHeaderBytes, owner, true, nil)
	o := &outcome{headErr: err}
	if err != nil {
		if owner.calls != 0 {
			return o, "BodyDone called for a refused response"
		}
		return o, ""
	}
	o.fill(resp)
	o.body, o.bodyErr = io.ReadAll(resp.Body)
	resp.Body.Close()
	o.trailer = resp.Trailer
	o.consumed = len(in) - r.Len() - br.Buffered()
	_, isBody := resp.Body.(*Body)
	switch {
	case resp.Body == http.NoBody:
		if owner.calls != 0 {
			return o, fmt.Sprintf("BodyDone called %d times for NoBody", owner.calls)
		}
	case !isBody:
		return o, fmt.Sprintf("Body is %T", resp.Body)
	case owner.calls != 1:
		return o, fmt.Sprintf("BodyDone called %d times", owner.calls)
	default:
		want := o.bodyErr == nil && !resp.Close && br.Buffered() == 0 && resp.StatusCode != 101
		if owner.reuse != want {
			return o, fmt.Sprintf("BodyDone(%t), want %t", owner.reuse, want)
		}
	}
	if resp.Request == nil || resp.Uncompressed || resp.TLS != nil {
		return o, "Request, Uncompressed or TLS not as net/http fills them"
	}
	return o, ""
}

func (o *outcome) fill(resp *http.Response) {
	o.status, o.code, o.proto = resp.Status, resp.StatusCode, resp.Proto
	o.major, o.minor = resp.ProtoMajor, resp.ProtoMinor
	o.header = resp.Header.Clone()
	o.contentLength = resp.ContentLength
	o.te = resp.TransferEncoding
	o.close = resp.Close
	o.noBody = resp.Body == http.NoBody
	if resp.Trailer != nil {
		o.trailerBefore = maps.Clone(resp.Trailer)
	}
}

// differ compares the parses of in by net/http and by h1 and describes
// the first difference, or returns "".
//
// Accounted differences, where h1 follows the Transport rather than
// http.ReadResponse: a 101 response has a *Body that reads io.EOF (the
// Transport gives it a read-write body on the connection; net/http's
// ReadResponse gives http.NoBody), so NoBody is not compared for 101.
// Errors are compared as error or not, never by text. The boundary is
// compared only when the body was read without error: after an error the
// connection is closed and its remaining bytes are of no use.
func differ(in []byte, method string) string {
	std := parseStd(in, method)
	got, breach := parseH1(in, method)
	if breach != "" {
		return "owner contract: " + breach
	}
	if (std.headErr != nil) != (got.headErr != nil) {
		return fmt.Sprintf("header: net/http err %v, h1 err %v", std.headErr, got.headErr)
	}
	if std.headErr != nil {
		return ""
	}
	type field struct {
		name      string
		std, got  any
		condition bool
	}
	for _, f := range []field{
		{"Status", std.status, got.status, true},
		{"StatusCode", std.code, got.code, true},
		{"Proto", std.proto, got.proto, true},
		{"ProtoMajor", std.major, got.major, true},
		{"ProtoMinor", std.minor, got.minor, true},
		{"Header", std.header, got.header, true},
		{"ContentLength", std.contentLength, got.contentLength, true},
		{"TransferEncoding", std.te, got.te, true},
		{"Close", std.close, got.close, true},
		{"NoBody", std.noBody, got.noBody, std.code != 101},
		{"Trailer before EOF", std.trailerBefore, got.trailerBefore, true},
		{"body", string(std.body), string(got.body), true},
		{"body error", std.bodyErr != nil, got.bodyErr != nil, true},
		{"Trailer", std.trailer, got.trailer, std.bodyErr == nil},
		{"consumed", std.consumed, got.consumed, std.bodyErr == nil},
	} {
		if f.condition && !reflect.DeepEqual(f.std, f.got) {
			return fmt.Sprintf("%s: net/http %#v, h1 %#v (body errors %v, %v)", f.name, f.std, f.got, std.bodyErr, got.bodyErr)
		}
	}
	return ""
}

// FuzzReadResponse checks that h1 parses a response exactly as
// http.ReadResponse does (see differ). Its seeds are the vectors in
// testdata and testdata/fuzz.
func FuzzReadResponse(f *testing.F) {
	for _, v := range loadVectors(f) {
		f.Add(v.raw, v.method == "HEAD")
	}
	f.Fuzz(func(t *testing.T, in []byte, head bool) {
		method := "GET"
		if head {
			method = "HEAD"
		}
		if d := differ(in, method); d != "" {
			t.Errorf("%s %q: %s", method, trunc(in), d)
		}
	})
}

func trunc(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}
