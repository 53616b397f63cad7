package compare

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/fusiongo/transport/answer"
	"github.com/fusiongo/transport/internal/answerdiff"
)

// Rules say what a comparison leaves out and how a schema's bodies compare.
// The zero value compares everything but Date and the hop-by-hop headers,
// JSON bodies as JSON and other bodies as bytes, and reports no timing
// differences. Rules are only read, so one value may serve concurrent
// comparisons.
type Rules struct {
	// IgnoreHeaders names response headers left out, besides Date and the
	// hop-by-hop headers, e.g. "X-Request-Id". Case does not matter. Nil
	// adds none.
	IgnoreHeaders []string

	// IgnorePaths are JSON paths left out of a JSON body comparison, e.g.
	// "extensions.tracing" or "errors.*.extensions": members separated by
	// dots, an array index as a number ("errors.0") or in brackets
	// ("errors[0]"), a member that is not an identifier in quotes and
	// brackets (`data["x-y"]`), and "*" for any member or index. A member
	// or element that a path names is removed from both bodies before
	// they are compared, and so is an object or array that this removal
	// leaves empty: a tracing extension on one side only is then no
	// difference. Nil leaves nothing out. See Validate.
	IgnorePaths []string

	// Comparators compare the bodies of a source schema, by name, instead
	// of the default comparison: JSON as JSON (see Run), anything else as
	// bytes. A Comparator sees the bodies after gzip decoding, and
	// IgnorePaths do not apply to it. Nil, or no entry for a schema: the
	// default comparison.
	Comparators map[string]Comparator

	// Redact names headers whose values are replaced by answer.Redacted in
	// every answer.Difference and in the headers a Report keeps, besides
	// Authorization, Cookie, Set-Cookie and Proxy-Authorization, which are
	// always redacted. The values are still compared. Case does not
	// matter. Nil adds none.
	Redact []string

	// TimingRatio, if greater than zero, makes an answer.KindTiming
	// difference of a request when one side took more than TimingRatio
	// times as long as the other and at least TimingMin longer (see
	// answer.Answer.Elapsed). Zero or negative: timing is not compared.
	TimingRatio float64

	// TimingMin is the least time by which the slower side must be slower
	// for a timing difference, so that two fast answers never make one.
	// Zero: any amount.
	TimingMin time.Duration
}

// Comparator compares two bodies of one source schema, a's and b's. If they
// differ it explains how, in a sentence such as "the cursors differ"; an
// empty explanation is replaced by a generic one.
type Comparator func(a, b []byte) (equal bool, explanation string)

// ExactBytes is a Comparator for bodies that must be equal byte for byte,
// such as a schema whose clients hash its answers.
func ExactBytes(a, b []byte) (bool, string) {
	if bytes.Equal(a, b) {
		return true, ""
	}
	off := 0
	for off < len(a) && off < len(b) && a[off] == b[off] {
		off++
	}
	return false, fmt.Sprintf("the bodies differ from byte %d on", off)
}

// Validate checks the rules: every IgnorePaths entry must parse, and the
// timing settings must not be negative. Run calls it; Compare skips a path
// that does not parse.
func (r *Rules) Validate() error {
	for _, p := range r.IgnorePaths {
		if _, err := parsePath(p); err != nil {
			return fmt.Errorf("ignore path %q: %w", p, err)
		}
	}
	if r.TimingRatio < 0 {
		return fmt.Errorf("timing ratio %v: want zero (off) or more than 1", r.TimingRatio)
	}
	if r.TimingRatio > 0 && r.TimingRatio <= 1 {
		return fmt.Errorf("timing ratio %v: want more than 1, or zero to leave timing out", r.TimingRatio)
	}
	if r.TimingMin < 0 {
		return fmt.Errorf("timing minimum %v: negative", r.TimingMin)
	}
	return nil
}

// RedactHeader returns a copy of h in which the values of the sensitive
// headers (see Redact) are answer.Redacted. A nil h gives nil.
func (r *Rules) RedactHeader(h http.Header) http.Header {
	return answerdiff.RedactHeader(h, answerdiff.RedactSet(r.Redact))
}

// Capture reads (up to max bytes) and closes resp's body, recording status,
// headers, body, error, final URL, redirects and elapsed time, as Run does
// for each side. resp and err are what an Invoker returned; elapsed is the
// time until it returned, to which Capture adds the time it spends reading
// the body. Zero or negative max means DefaultMaxBodyBytes. The headers are
// kept as they are: Compare redacts what it publishes.
func Capture(resp *http.Response, err error, elapsed time.Duration, max int64) answer.Answer {
	if max <= 0 {
		max = DefaultMaxBodyBytes
	}
	return answerdiff.Capture(resp, err, elapsed, max)
}

// Compare returns the classified differences between two answers to the
// same request to schema, a's named nameA and b's nameB in the
// explanations, by the rules Run applies (see Run) and rules. No
// differences means the answers count as identical. Gzip bodies are
// decoded up to DefaultMaxBodyBytes, and at most DefaultMaxPaths JSON paths
// are listed. Compare is safe for concurrent use.
func Compare(schema string, a, b answer.Answer, nameA, nameB string, rules Rules) []answer.Difference {
	c := newComparer(nameA, nameB, &rules, DefaultMaxBodyBytes, DefaultMaxPaths)
	res := c.result("", schema, a, b)
	return res.Differences
}

// timingDifference reports a side that took more than the rules allow
// relative to the other.
func (c *comparer) timingDifference(x, y *answer.Answer) (answer.Difference, bool) {
	if c.timingRatio <= 0 || x.Elapsed <= 0 || y.Elapsed <= 0 {
		return answer.Difference{}, false
	}
	slowName, slow, fastName, fast := c.a, x.Elapsed, c.b, y.Elapsed
	if y.Elapsed > x.Elapsed {
		slowName, slow, fastName, fast = c.b, y.Elapsed, c.a, x.Elapsed
	}
	if float64(slow) <= c.timingRatio*float64(fast) || slow-fast < c.timingMin {
		return answer.Difference{}, false
	}
	return answer.Difference{
		Kind: answer.KindTiming,
		A:    roundDuration(x.Elapsed).String(),
		B:    roundDuration(y.Elapsed).String(),
		Explanation: fmt.Sprintf("%s took %v, %s times the %v %s took",
			slowName, roundDuration(slow), strconv.FormatFloat(float64(slow)/float64(fast), 'f', 1, 64), roundDuration(fast), fastName),
	}, true
}

// roundDuration keeps three or four significant digits of d, enough to
// read.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	default:
		return d.Round(time.Microsecond)
	}
}
