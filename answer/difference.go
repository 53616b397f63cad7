package answer

// Kind says what part of two answers differs. The zero Kind is no kind: no
// comparison reports it, and where a Kind filters (compare.Limit) it means
// any kind.
type Kind string

// The kinds of Difference.
const (
	// KindStatus is a different status code.
	KindStatus Kind = "status"
	// KindHeader is a header with different values, or on one side only.
	KindHeader Kind = "header"
	// KindBody is a different body: a JSON path whose values differ, or
	// bytes that differ.
	KindBody Kind = "body"
	// KindError is an error on one side only; errors on both sides count
	// as equal.
	KindError Kind = "error"
	// KindRedirect is a redirect that one side followed and the other did
	// not, or that ended elsewhere.
	KindRedirect Kind = "redirect"
	// KindTiming is a side that took much longer than the other
	// (compare.Rules.TimingRatio). It is only reported when asked for:
	// never with the zero compare.Rules, nor by shadow's default
	// Comparer.
	KindTiming Kind = "timing"
)

// Redacted replaces the value of a sensitive header wherever one is
// published: in a Difference, in compare's Reports and their JSON, JUnit
// and HTML forms, and in a recorded corpus. Authorization, Cookie,
// Set-Cookie and Proxy-Authorization are always redacted;
// compare.Rules.Redact and compare.RecorderOptions.Redact name more.
const Redacted = "[REDACTED]"

// Difference is one way in which two answers to one request differ, the
// first side's (A: in shadow mode the primary, "legacy") and the second
// side's (B: the candidate, "sockets"). Its JSON form, the same in every
// report, has the keys kind, path, a, b, explanation and diff, the empty
// ones but explanation and kind left out.
//
// The zero Difference is no difference of any kind; no comparison reports
// it.
type Difference struct {
	// Kind says what differs.
	Kind Kind `json:"kind"`

	// Path is the header name for KindHeader and the JSON path (like
	// data.users[2].name, or $ for the whole value) for a JSON body
	// difference; empty otherwise, and for the Difference that counts the
	// JSON paths beyond the number listed (compare.Options.MaxPaths).
	Path string `json:"path,omitempty"`

	// A and B are the two sides' values: a status code, a header's values
	// joined by ", ", a JSON value, an error message, a final URL, a
	// quoted piece of a body, or a duration. Empty means the side has none
	// (an absent header or JSON member, no error). The value of a
	// sensitive header is Redacted.
	A string `json:"a,omitempty"`
	B string `json:"b,omitempty"`

	// Explanation is one sentence that names both sides.
	Explanation string `json:"explanation"`

	// Diff is a text diff (-A +B) of the two JSON bodies. Package
	// compare's comparisons set it, with go-cmp's text, on the first JSON
	// body difference of an answer pair only, so that a report shows it
	// once; empty otherwise, and always from shadow's default Comparer.
	Diff string `json:"diff,omitempty"`
}
