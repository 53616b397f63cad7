package compare

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/fusiongo/transport/answer"
)

// The JSON form of a Report. Bodies and headers are left out: the
// differences quote what matters of them, and a report that CI keeps must
// not carry a response's payload.
type (
	reportJSON struct {
		A       string              `json:"a"`
		B       string              `json:"b"`
		Counts  Counts              `json:"counts"`
		Kinds   map[answer.Kind]int `json:"kinds"`
		Groups  []Group             `json:"groups"`
		Results []resultJSON        `json:"results"`
	}
	resultJSON struct {
		Name        string              `json:"name"`
		Schema      string              `json:"schema"`
		Identical   bool                `json:"identical"`
		A           outcomeJSON         `json:"a"`
		B           outcomeJSON         `json:"b"`
		Differences []answer.Difference `json:"differences"`
		Notes       []string            `json:"notes,omitempty"`
	}
	outcomeJSON struct {
		Status    int               `json:"status,omitempty"`
		Error     string            `json:"error,omitempty"`
		ElapsedMS float64           `json:"elapsed_ms"`
		BodyBytes int               `json:"body_bytes"`
		Truncated bool              `json:"truncated,omitempty"`
		URL       string            `json:"url,omitempty"`
		FinalURL  string            `json:"final_url,omitempty"`
		Redirects []answer.Redirect `json:"redirects,omitempty"`
	}
)

// MarshalJSON writes the report as one JSON object:
//
//	{"a":"legacy","b":"sockets",
//	 "counts":{"requests":3,"identical":2,"different":1,"both_failed":0},
//	 "kinds":{"body":1,"error":0,"header":0,"redirect":0,"status":0,"timing":0},
//	 "groups":[{"kind":"body","path":"data.name","explanation":"...","requests":["reviews/1"]}],
//	 "results":[{"name":"reviews/1","schema":"reviews","identical":false,
//	   "a":{"status":200,"elapsed_ms":1.2,"body_bytes":24,"url":"..."},"b":{...},
//	   "differences":[{"kind":"body","path":"data.name","a":"\"Ann\"","b":"\"Anna\"","explanation":"...","diff":"..."}]}]}
//
// kinds counts the requests with a difference of each kind (see
// KindCounts), groups are Groups. Of each side's outcome it keeps the
// status, error, elapsed time, body size and URLs, not the headers or body.
func (r Report) MarshalJSON() ([]byte, error) {
	out := reportJSON{A: r.A, B: r.B, Counts: r.Counts(), Kinds: r.KindCounts(), Groups: r.Groups(), Results: make([]resultJSON, len(r.Results))}
	if out.Groups == nil {
		out.Groups = []Group{}
	}
	for i := range r.Results {
		res := &r.Results[i]
		diffs := res.Differences
		if diffs == nil {
			diffs = []answer.Difference{}
		}
		out.Results[i] = resultJSON{
			Name: res.Name, Schema: res.Schema, Identical: res.Identical(),
			A: outcomeToJSON(&res.A), B: outcomeToJSON(&res.B),
			Differences: diffs, Notes: res.Notes,
		}
	}
	return json.Marshal(out)
}

func outcomeToJSON(o *answer.Answer) outcomeJSON {
	return outcomeJSON{
		Status: o.Status, Error: o.Err, ElapsedMS: float64(o.Elapsed.Microseconds()) / 1000,
		BodyBytes: len(o.Body), Truncated: o.Truncated,
		URL: o.URL, FinalURL: o.FinalURL, Redirects: o.Redirects,
	}
}

// WriteJSON writes the report's JSON form (see MarshalJSON), indented.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(*r)
}

// The JUnit XML form of a Report, as CI systems read it: one testsuite, a
// testcase per request.
type (
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Errors   int          `xml:"errors,attr"`
		Time     string       `xml:"time,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name     string      `xml:"name,attr"`
		Tests    int         `xml:"tests,attr"`
		Failures int         `xml:"failures,attr"`
		Errors   int         `xml:"errors,attr"`
		Skipped  int         `xml:"skipped,attr"`
		Time     string      `xml:"time,attr"`
		Cases    []junitCase `xml:"testcase"`

		seconds float64 // Time as a number, for a document's sum
	}
	junitCase struct {
		Name      string        `xml:"name,attr"`
		Classname string        `xml:"classname,attr"`
		Time      string        `xml:"time,attr"`
		Failure   *junitFailure `xml:"failure,omitempty"`
		SystemOut string        `xml:"system-out,omitempty"`
	}
	junitFailure struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
)

// WriteJUnit writes the report as JUnit XML: one testsuite named suite
// (empty: "compare A vs B"), one testcase per request, named after it, with
// classname "compare.<schema>" and the time both sides took. A request
// whose answers differ has a failure: its message is the explanations
// joined by "; ", its type the kinds, its text one line per difference with
// any JSON diff. Notes go to the testcase's system-out. Text is escaped by
// encoding/xml, and characters XML cannot hold are replaced by U+FFFD.
func (r *Report) WriteJUnit(w io.Writer, suite string) error {
	if suite == "" {
		suite = fmt.Sprintf("compare %s vs %s", r.A, r.B)
	}
	s := r.junitSuite(suite)
	return writeJUnit(w, junitSuites{Name: suite, Tests: s.Tests, Failures: s.Failures, Time: s.Time, Suites: []junitSuite{s}})
}

// WriteJUnitReports writes several reports, such as the pairs of a run
// that compares one side with each of the others, as one JUnit XML
// document named name, since a CI system reads one document per file: a
// testsuite per report, in order, named "NAME A vs B" (with an empty name,
// "compare A vs B"), each as WriteJUnit writes its one testsuite. The
// document's counts and time are the sums over the reports.
func WriteJUnitReports(w io.Writer, name string, reports ...*Report) error {
	doc := junitSuites{Name: name}
	var total float64
	for _, r := range reports {
		suite := fmt.Sprintf("compare %s vs %s", r.A, r.B)
		if name != "" {
			suite = fmt.Sprintf("%s %s vs %s", name, r.A, r.B)
		}
		s := r.junitSuite(suite)
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		total += s.seconds
		doc.Suites = append(doc.Suites, s)
	}
	doc.Time = strconv.FormatFloat(total, 'f', 3, 64)
	return writeJUnit(w, doc)
}

// junitSuite is the report as one testsuite named suite.
func (r *Report) junitSuite(suite string) junitSuite {
	c := r.Counts()
	s := junitSuite{Name: suite, Tests: c.Requests, Failures: c.Different, Cases: make([]junitCase, len(r.Results))}
	var total time.Duration
	for i := range r.Results {
		res := &r.Results[i]
		took := res.A.Elapsed + res.B.Elapsed
		total += took
		tc := junitCase{Name: res.Name, Classname: "compare." + res.Schema, Time: seconds(took), SystemOut: strings.Join(res.Notes, "\n")}
		if !res.Identical() {
			tc.Failure = r.junitFailure(res)
		}
		s.Cases[i] = tc
	}
	s.Time, s.seconds = seconds(total), total.Seconds()
	return s
}

// writeJUnit writes doc with its XML header.
func writeJUnit(w io.Writer, doc junitSuites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func (r *Report) junitFailure(res *Result) *junitFailure {
	var msgs, types []string
	var text strings.Builder
	seenType := make(map[answer.Kind]bool)
	for _, d := range res.Differences {
		msgs = append(msgs, d.Explanation)
		if !seenType[d.Kind] {
			seenType[d.Kind] = true
			types = append(types, string(d.Kind))
		}
		label := string(d.Kind)
		if d.Path != "" {
			label += " " + d.Path
		}
		fmt.Fprintf(&text, "%s: %s\n", label, d.Explanation)
		if d.Diff != "" {
			fmt.Fprintf(&text, "(-%s +%s):\n%s\n", r.A, r.B, strings.TrimSuffix(d.Diff, "\n"))
		}
	}
	return &junitFailure{Message: strings.Join(msgs, "; "), Type: strings.Join(types, ","), Text: text.String()}
}

// seconds writes d as JUnit wants a time: seconds with a decimal point.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
}
