// Package answerdiff is the comparison core that package shadow's default
// Comparer and package compare share: what two answers to one request
// differ in, each difference with the two values and a sentence that names
// both sides. It needs nothing outside the standard library and package
// answer, so that package transport can link shadow without compare's
// go-cmp.
//
// It speaks package answer's vocabulary: it compares two answer.Answers
// and reports answer.Differences, which shadow and compare publish as they
// are. A Comparer reports, in this order:
//   - an error on one side only (KindError), and nothing else then; errors
//     on both sides are equal;
//   - a redirect that one side followed and the other did not, or that
//     ended elsewhere (KindRedirect), and nothing else then;
//   - different status codes (KindStatus);
//   - different headers (KindHeader), one per canonical name, sorted by
//     name. Left out: Date, the hop-by-hop headers (Connection,
//     Keep-Alive, Proxy-Connection, Proxy-Authenticate,
//     Proxy-Authorization, Te, Trailer, Transfer-Encoding, Upgrade),
//     those that either side's Connection header names, Options.Ignore,
//     and Content-Length when the bodies differ or a side decompressed
//     transparently. When one side decompressed transparently and the
//     other returned an encoded body, a single Content-Encoding difference
//     says so. The values of the Options.Redact headers (by default
//     Authorization, Cookie, Set-Cookie and Proxy-Authorization) are
//     compared but never published: a Difference carries Redacted;
//   - different bodies (KindBody), compared after gzip decoding (up to
//     Options.MaxBodyBytes; a body that does not decode is compared as
//     received, with a note) by Options.Body, by default: as JSON values
//     when both are exactly one JSON value, where the order of object keys
//     does not matter and numbers compare by their text, one difference
//     per JSON path (data.users[2].name, data["x-y"], $ for the whole
//     value) in key and index order up to Options.MaxPaths and one that
//     counts the rest; else byte for byte, one difference quoting both
//     sides from a little before the first byte that differs.
//
// Package compare layers its Rules (ignored headers and JSON paths, a
// Comparator per source schema, timing, the go-cmp text diff) on top,
// through Options and the pieces of the default body comparison (Body,
// JSON, Bytes, DecodeJSON). Both packages also capture a side's answer
// from its response with Capture and redact published headers with
// RedactSet and RedactHeader.
package answerdiff

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fusiongo/transport/answer"
)

// Defaults of Options.
const (
	// MaxBodyBytes caps a gzip body's decoding (compare.DefaultMaxBodyBytes).
	MaxBodyBytes = 16 << 20
	// MaxPaths caps the JSON paths listed (compare.DefaultMaxPaths).
	MaxPaths = 20
)

// Options configure a Comparer.
type Options struct {
	// A and B name the two sides in the explanations.
	A, B string

	// MaxBodyBytes caps a gzip body's decoding; zero means MaxBodyBytes.
	MaxBodyBytes int64

	// MaxPaths caps the JSON paths listed; zero means MaxPaths.
	MaxPaths int

	// Ignore holds canonical header names left out besides the fixed ones.
	Ignore map[string]bool

	// Redact holds the canonical header names whose values an answer.Difference
	// never carries; nil means RedactSet(nil).
	Redact map[string]bool

	// Body, if not nil, compares the two decoded bodies of a request to
	// schema instead of (*Comparer).Body.
	Body func(schema string, x, y []byte) []answer.Difference
}

// A Comparer compares pairs of answers. It is only read, so one serves
// concurrent comparisons.
type Comparer struct {
	a, b     string
	maxBody  int64
	maxPaths int
	ignore   map[string]bool
	redact   map[string]bool
	body     func(schema string, x, y []byte) []answer.Difference
}

// New returns a Comparer for o.
func New(o Options) *Comparer {
	c := &Comparer{a: o.A, b: o.B, maxBody: o.MaxBodyBytes, maxPaths: o.MaxPaths, ignore: o.Ignore, redact: o.Redact, body: o.Body}
	if c.maxBody <= 0 {
		c.maxBody = MaxBodyBytes
	}
	if c.maxPaths <= 0 {
		c.maxPaths = MaxPaths
	}
	if c.redact == nil {
		c.redact = RedactSet(nil)
	}
	if c.body == nil {
		c.body = func(_ string, x, y []byte) []answer.Difference { return c.Body(x, y) }
	}
	return c
}

// Compare returns the differences between x (side A's answer) and y (side
// B's) to a request to schema, in the order the package comment gives, and
// notes on bodies that said gzip and did not decode or were cut at
// MaxBodyBytes when decoded.
func (c *Comparer) Compare(schema string, x, y *answer.Answer) (diffs []answer.Difference, notes []string) {
	switch {
	case x.Err != "" && y.Err != "":
		return nil, nil
	case x.Err != "" || y.Err != "":
		return []answer.Difference{c.errorDifference(x, y)}, nil
	}
	if d, ok := c.redirectDifference(x, y); ok {
		return []answer.Difference{d}, nil
	}
	if x.Status != y.Status {
		diffs = append(diffs, answer.Difference{
			Kind: answer.KindStatus, A: strconv.Itoa(x.Status), B: strconv.Itoa(y.Status),
			Explanation: fmt.Sprintf("%s answered %d; %s answered %d", c.a, x.Status, c.b, y.Status),
		})
	}

	// Transparent decompression drops Content-Encoding and Content-Length
	// from the response it hands over (net/http, Response.Uncompressed),
	// so those two headers only say which side decoded.
	skip := make(map[string]bool)
	if x.Uncompressed || y.Uncompressed {
		skip["Content-Length"] = true
	}
	var encodingDiff *answer.Difference
	switch {
	case x.Uncompressed && contentEncoding(y) != "":
		encodingDiff = transparentDifference(c.a, c.b, x, y, false)
	case y.Uncompressed && contentEncoding(x) != "":
		encodingDiff = transparentDifference(c.b, c.a, y, x, true)
	}
	if encodingDiff != nil {
		skip["Content-Encoding"] = true
	}

	xb, xnote := c.decodedBody(c.a, x)
	yb, ynote := c.decodedBody(c.b, y)
	for _, n := range []string{xnote, ynote} {
		if n != "" {
			notes = append(notes, n)
		}
	}
	if !bytes.Equal(xb, yb) {
		// Content-Length follows from the bytes: a body difference says
		// more, and bodies that only differ where the comparison looks
		// away (JSON key order, compare's rules) are no difference.
		skip["Content-Length"] = true
	}
	bodyDiffs := c.body(schema, xb, yb)

	headerDiffs := c.headerDifferences(x.Header, y.Header, skip)
	if encodingDiff != nil {
		headerDiffs = append(headerDiffs, *encodingDiff)
		slices.SortStableFunc(headerDiffs, func(p, q answer.Difference) int { return strings.Compare(p.Path, q.Path) })
	}
	return append(append(diffs, headerDiffs...), bodyDiffs...), notes
}

func (c *Comparer) errorDifference(x, y *answer.Answer) answer.Difference {
	failed, answered, f, o := c.a, c.b, x, y
	if x.Err == "" {
		failed, answered, f, o = c.b, c.a, y, x
	}
	return answer.Difference{Kind: answer.KindError, A: x.Err, B: y.Err, Explanation: fmt.Sprintf("%s failed: %s; %s answered %d", failed, f.Err, answered, o.Status)}
}
