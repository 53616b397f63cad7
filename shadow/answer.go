package shadow

import (
	"context"
	"net/http"
	"time"

	"github.com/fusiongo/transport/internal/answerdiff"
)

// Sender is what a Shadow needs of each path: the sending half of
// transport.Invoker, which satisfies it.
type Sender interface {
	Do(ctx context.Context, schema string, req *http.Request) (*http.Response, error)
	Post(ctx context.Context, schema string, body []byte) (*http.Response, error)
}

// Answer is what one path answered to a shadowed query, as a Comparer sees
// it. A Shadow only compares whole answers: one cut at
// Options.MaxBodyBytes is dropped (DropTooLarge) before a Comparer sees
// it.
type Answer struct {
	// Err is the error of the Sender or of reading the body; empty if the
	// path answered.
	Err string

	// Status is the response's status code; zero when Err is set.
	Status int

	// Header is a copy of the response's headers, unredacted: a Comparer
	// redacts what it publishes (see Difference). Nil when Err is set.
	Header http.Header

	// Body is the body as received. A gzip body the Sender did not
	// decode stays encoded here.
	Body []byte

	// Uncompressed reports whether the Sender decompressed the body
	// transparently (http.Response.Uncompressed).
	Uncompressed bool

	// URL is where the request was first sent, and FinalURL where the
	// answer came from (the response's Request.URL, redacted); they
	// differ after a redirect. Empty if the response does not say.
	URL, FinalURL string

	// Redirects are the redirects the Sender followed, first first; nil
	// if none, or if the response does not say.
	Redirects []Redirect

	// Elapsed is the time from sending the request to reading the last
	// byte of the body.
	Elapsed time.Duration
}

// Redirect is one redirect that a path followed.
type Redirect struct {
	// Status is the redirect's status code, such as 307.
	Status int
	// Location is the redirect's Location header, as sent.
	Location string
}

// Kind says what part of the two answers differs.
type Kind string

// The kinds of Difference.
const (
	KindStatus   Kind = "status"
	KindHeader   Kind = "header"
	KindBody     Kind = "body"
	KindError    Kind = "error"
	KindRedirect Kind = "redirect"
	KindTiming   Kind = "timing" // never from the default Comparer
)

// Difference is one way in which the primary's and the candidate's answers
// differ; it encodes to JSON as compare.Difference does. A Comparer never
// puts the value of a sensitive header (Authorization, Cookie, Set-Cookie,
// Proxy-Authorization) in one: it writes Redacted instead.
type Difference struct {
	// Kind says what differs.
	Kind Kind `json:"kind"`

	// Path is the header name for KindHeader and the JSON path (like
	// data.users[2].name, or $ for the whole value) for a JSON body
	// difference; empty otherwise.
	Path string `json:"path,omitempty"`

	// A and B are the primary's and the candidate's values: a status
	// code, a header's values joined by ", ", a JSON value, an error
	// message, a final URL, or a quoted piece of a body. Empty means the
	// side has none (an absent header or JSON member, no error).
	A string `json:"a,omitempty"`
	B string `json:"b,omitempty"`

	// Explanation is one sentence that names both sides ("legacy" for the
	// primary, "sockets" for the candidate).
	Explanation string `json:"explanation"`

	// Diff is a text diff of the two JSON bodies, if the Comparer writes
	// one (package compare's does, on the first body difference); the
	// default Comparer leaves it empty.
	Diff string `json:"diff,omitempty"`
}

// Redacted replaces the value of a sensitive header in a Difference.
const Redacted = "[REDACTED]"

// Comparer compares the primary's and the candidate's answers to one
// shadowed query to schema. It returns the differences, none when the
// answers count as equal. It is called from the comparison goroutines,
// concurrently, and must not keep the answers.
//
// Options.Comparer nil means the default Comparer, which needs nothing
// outside the standard library. It reports, in this order and as package
// compare's Compare does with the zero compare.Rules:
//   - an error on one side only (KindError); errors on both sides are
//     equal;
//   - a redirect that one side followed and the other did not, or that
//     ended elsewhere (KindRedirect), and nothing else then;
//   - different status codes (KindStatus);
//   - different headers (KindHeader, one per name, sorted), leaving out
//     Date, the hop-by-hop headers and those named by either side's
//     Connection header; Content-Length when the bodies differ or a side
//     decompressed transparently; and, when one side decompressed
//     transparently and the other did not, a single Content-Encoding
//     difference;
//   - different bodies (KindBody), compared after gzip decoding (up to 16
//     MiB): as JSON values when both are JSON, where the order of object
//     keys does not matter and numbers compare by their text, one
//     difference per JSON path up to 20 and one counting the rest; else
//     byte for byte, one difference.
//
// Unlike compare's, the default fills no Difference.Diff. For ignored
// headers or JSON paths, a Comparator per source schema or timing, use
// compare.ShadowComparer.
type Comparer interface {
	Compare(schema string, primary, candidate Answer) []Difference
}

// ComparerFunc is a function that is a Comparer.
type ComparerFunc func(schema string, primary, candidate Answer) []Difference

// Compare calls f.
func (f ComparerFunc) Compare(schema string, primary, candidate Answer) []Difference {
	return f(schema, primary, candidate)
}

// capture reads (up to max bytes) and closes resp's body, as one side's
// answer; truncated says whether there was more. resp and err are what a
// Sender returned; elapsed is the time until it returned, to which capture
// adds the time it spends reading the body.
func capture(resp *http.Response, err error, elapsed time.Duration, max int64) (Answer, bool) {
	c, truncated := answerdiff.Capture(resp, err, elapsed, max)
	return Answer{
		Err: c.Err, Status: c.Status, Header: c.Header, Body: c.Body, Uncompressed: c.Uncompressed, URL: c.URL, FinalURL: c.FinalURL, Elapsed: c.Elapsed,
		Redirects: answerdiff.Map(c.Redirects, func(r answerdiff.Redirect) Redirect { return Redirect(r) }),
	}, truncated
}
