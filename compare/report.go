package compare

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Kind says what part of the two answers differs.
type Kind string

// The kinds of Difference.
const (
	KindStatus   Kind = "status"
	KindHeader   Kind = "header"
	KindBody     Kind = "body"
	KindError    Kind = "error"
	KindRedirect Kind = "redirect"

	// KindTiming is a side that took much longer than the other
	// (Rules.TimingRatio). It is only reported when asked for.
	KindTiming Kind = "timing"
)

// kinds lists every Kind, in the order a report counts them.
var kinds = []Kind{KindStatus, KindHeader, KindBody, KindError, KindRedirect, KindTiming}

// Difference is one way in which the two sides' answers to a request differ.
type Difference struct {
	// Kind is what differs: status, header, body, error, redirect or
	// timing.
	Kind Kind `json:"kind"`

	// Path is the header name for KindHeader and the JSON path (like
	// data.users[2].name, or $ for the whole value) for a JSON body
	// difference; empty otherwise, and for the Difference that counts the
	// JSON paths beyond Options.MaxPaths.
	Path string `json:"path,omitempty"`

	// A and B are the two sides' values: a status code, a header's values
	// joined by ", ", a JSON value, an error message, a final URL, a
	// quoted piece of a body, or a duration. Empty means the side has none
	// (an absent header or JSON member, no error). The value of a
	// sensitive header is Redacted (see Rules.Redact).
	A string `json:"a,omitempty"`
	B string `json:"b,omitempty"`

	// Explanation is one sentence that names both sides.
	Explanation string `json:"explanation"`

	// Diff is the cmp.Diff text (-A +B) of the two JSON bodies. It is set
	// on the first JSON body difference of a result only, so that a
	// report shows it once.
	Diff string `json:"diff,omitempty"`
}

// Redirect is one redirect that a side followed.
type Redirect struct {
	// Status is the redirect's status code (301, 302, 303, 307, 308).
	Status int `json:"status"`
	// Location is the target as the Location header gave it.
	Location string `json:"location"`
}

// Outcome is what one side answered to one request.
type Outcome struct {
	// Err is the error of the Invoker or of reading the body; empty if
	// the side answered.
	Err string

	// Status and Header are the response's; zero and nil after an error.
	Status int
	Header http.Header

	// Body is the body as received, up to Options.MaxBodyBytes; Truncated
	// says whether there was more. A gzip body stays encoded here.
	Body      []byte
	Truncated bool

	// Uncompressed reports whether the side decompressed the body
	// transparently (http.Response.Uncompressed).
	Uncompressed bool

	// URL is where the request was sent, if known (see Options.URLs).
	// FinalURL is where the answer came from (the response's
	// Request.URL); it differs from URL after a redirect. Empty if the
	// Invoker's response does not say.
	URL, FinalURL string

	// Redirects are the redirects the side followed, first first.
	Redirects []Redirect

	// Elapsed is how long the side took, from sending the request to
	// reading the last byte of the body kept (see Capture). Zero if not
	// measured.
	Elapsed time.Duration
}

// Result is the comparison of the two answers to one request.
type Result struct {
	// Name is the corpus request's name, and Schema its source schema.
	Name   string
	Schema string

	// A and B are the answers of the Report's sides A and B.
	A, B Outcome

	// Differences is empty when the answers are identical.
	Differences []Difference

	// Notes are facts worth knowing that are not differences: both sides
	// failed, a body was cut at Options.MaxBodyBytes, a gzip body did not
	// decode.
	Notes []string
}

// Identical reports whether the two answers showed no difference.
func (r *Result) Identical() bool { return len(r.Differences) == 0 }

// BothFailed reports whether both sides failed, which counts as identical.
func (r *Result) BothFailed() bool { return r.A.Err != "" && r.B.Err != "" }

// Report is the outcome of Run: one Result per corpus request, in corpus
// order.
type Report struct {
	// A and B are the names of the sides, as Run was given them.
	A, B string
	// Results holds one Result per corpus request, in corpus order.
	Results []Result
}

// Counts summarises a Report.
type Counts struct {
	// Requests is the number of results; Identical and Different split
	// them by whether any Difference was found.
	Requests  int `json:"requests"`
	Identical int `json:"identical"`
	Different int `json:"different"`
	// BothFailed counts the identical requests that failed on both sides.
	BothFailed int `json:"both_failed"`
}

// Counts counts the requests by outcome.
func (r *Report) Counts() Counts {
	c := Counts{Requests: len(r.Results)}
	for i := range r.Results {
		res := &r.Results[i]
		switch {
		case !res.Identical():
			c.Different++
		case res.BothFailed():
			c.Identical++
			c.BothFailed++
		default:
			c.Identical++
		}
	}
	return c
}

// Identical reports whether every request had identical answers.
func (r *Report) Identical() bool { return r.Counts().Different == 0 }

// Write prints the report as text: a line per request ("ok   name" or
// "DIFF name"), under it the differences with their explanations and any
// notes, and a summary line at the end.
func (r *Report) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	const indent = "     "
	for i := range r.Results {
		res := &r.Results[i]
		if res.Identical() {
			fmt.Fprintf(bw, "ok   %s\n", res.Name)
		} else {
			fmt.Fprintf(bw, "DIFF %s\n", res.Name)
		}
		for _, d := range res.Differences {
			label := string(d.Kind)
			if d.Path != "" {
				label += " " + d.Path
			}
			fmt.Fprintf(bw, "%s%s: %s\n", indent, label, d.Explanation)
			if d.Diff != "" {
				fmt.Fprintf(bw, "%s  (-%s +%s):\n", indent, r.A, r.B)
				for line := range strings.Lines(d.Diff) {
					fmt.Fprintf(bw, "%s    %s", indent, line)
				}
				if !strings.HasSuffix(d.Diff, "\n") {
					bw.WriteByte('\n')
				}
			}
		}
		for _, n := range res.Notes {
			fmt.Fprintf(bw, "%snote: %s\n", indent, n)
		}
	}
	fmt.Fprintf(bw, "%s\n", r.Counts())
	return bw.Flush()
}

// String is the summary line of a report: "3 requests: 1 identical, 2
// different".
func (c Counts) String() string {
	s := fmt.Sprintf("%d %s: %d identical, %d different", c.Requests, plural(c.Requests, "request", "requests"), c.Identical, c.Different)
	if c.BothFailed > 0 {
		s += fmt.Sprintf(" (%d of the identical failed on both sides)", c.BothFailed)
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
