package compare

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/fusiongo/transport/answer"
)

// kinds lists every answer.Kind, in the order a report counts them.
var kinds = []answer.Kind{answer.KindStatus, answer.KindHeader, answer.KindBody, answer.KindError, answer.KindRedirect, answer.KindTiming}

// Result is the comparison of the two answers to one request.
type Result struct {
	// Name is the corpus request's name, and Schema its source schema.
	Name   string
	Schema string

	// A and B are the answers of the Report's sides A and B, as Run
	// captured them (see Capture): a body longer than
	// Options.MaxBodyBytes is cut there and marked Truncated.
	A, B answer.Answer

	// Differences is empty when the answers are identical. In each, A is
	// side A's value and B side B's.
	Differences []answer.Difference

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
	// them by whether any answer.Difference was found.
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
