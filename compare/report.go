package compare

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
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
)

// Difference is one way in which the two sides' answers to a request differ.
type Difference struct {
	Kind Kind

	// Path is the header name for KindHeader and the JSON path (like
	// data.users[2].name, or $ for the whole value) for a JSON body
	// difference; empty otherwise, and for the Difference that counts the
	// JSON paths beyond Options.MaxPaths.
	Path string

	// A and B are the two sides' values: a status code, a header's values
	// joined by ", ", a JSON value, an error message, a final URL, or a
	// quoted piece of a body. Empty means the side has none (an absent
	// header or JSON member, no error).
	A, B string

	// Explanation is one sentence that names both sides.
	Explanation string

	// Diff is the cmp.Diff text (-A +B) of the two JSON bodies. It is set
	// on the first JSON body difference of a result only, so that a
	// report shows it once.
	Diff string
}

// Redirect is one redirect that a side followed.
type Redirect struct {
	Status   int
	Location string // as the Location header gave it
}

// Outcome is what one side answered to one request.
type Outcome struct {
	// Err is the error of the Invoker or of reading the body; empty if
	// the side answered.
	Err string

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
}

// Result is the comparison of the two answers to one request.
type Result struct {
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
	A, B    string // the names of the sides
	Results []Result
}

// Counts summarises a Report.
type Counts struct {
	Requests  int
	Identical int
	Different int
	// BothFailed counts the identical requests that failed on both sides.
	BothFailed int
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
	c := r.Counts()
	fmt.Fprintf(bw, "%d %s: %d identical, %d different", c.Requests, plural(c.Requests, "request", "requests"), c.Identical, c.Different)
	if c.BothFailed > 0 {
		fmt.Fprintf(bw, " (%d of the identical failed on both sides)", c.BothFailed)
	}
	bw.WriteByte('\n')
	return bw.Flush()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
