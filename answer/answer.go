package answer

import (
	"context"
	"net/http"
	"time"
)

// Sender is what a comparison needs of each path: the sending half of
// transport.Invoker, which satisfies it. compare.Run sends a corpus
// through two Senders; shadow.New serves from one and shadows to the other.
type Sender interface {
	Do(ctx context.Context, schema string, req *http.Request) (*http.Response, error)
	Post(ctx context.Context, schema string, body []byte) (*http.Response, error)
}

// Answer is what one path answered to one request to a source schema, as
// compare.Capture (and a Shadow, for each side) records it from the
// Sender's response.
//
// The zero Answer is an answer with status 0, no headers, an empty body
// and no error: no Sender gives it, so it only serves as a starting point.
type Answer struct {
	// Err is the error of the Sender or of reading the body; empty if the
	// path answered.
	Err string

	// Status is the response's status code, and Header a copy of its
	// headers, unredacted: whoever publishes a Difference redacts it (see
	// Redacted). Zero and nil when the Sender failed.
	Status int
	Header http.Header

	// Body is the body as received, up to a cap (compare.Options and
	// shadow.Options have a MaxBodyBytes). A gzip body the Sender did not
	// decode stays encoded here.
	Body []byte

	// Truncated reports whether the body was longer than the cap and Body
	// holds its first part only. A Shadow compares whole answers only: it
	// drops a truncated one (shadow.DropTooLarge), so a shadow.Comparer
	// never sees Truncated set.
	Truncated bool

	// Uncompressed reports whether the Sender decompressed the body
	// transparently (http.Response.Uncompressed).
	Uncompressed bool

	// URL is where the request was first sent, and FinalURL where the
	// answer came from (the response's Request.URL), both redacted
	// (url.URL.Redacted); they differ after a redirect. Empty if not known
	// (see compare.Options.URLs) or if the response does not say.
	URL, FinalURL string

	// Redirects are the redirects the Sender followed, first first; nil if
	// none, or if the response does not say.
	Redirects []Redirect

	// Elapsed is the time from sending the request to reading the last
	// byte of the body kept. Zero if not measured.
	Elapsed time.Duration
}

// Redirect is one redirect that a path followed; compare's JSON report
// writes it as {"status":307,"location":"/v2"}. The zero Redirect is none.
type Redirect struct {
	// Status is the redirect's status code (301, 302, 303, 307, 308).
	Status int `json:"status"`
	// Location is the target as the Location header gave it.
	Location string `json:"location"`
}
