package shadow

import "github.com/fusiongo/transport/answer"

// Comparer compares the primary's and the candidate's answers to one
// shadowed query to schema. It returns the differences, none when the
// answers count as equal; in each, A is the primary's value and B the
// candidate's, and an explanation names them "legacy" and "sockets". A
// Comparer never puts the value of a sensitive header (Authorization,
// Cookie, Set-Cookie, Proxy-Authorization) in an answer.Difference: it
// writes answer.Redacted instead. It is called from the comparison
// goroutines, concurrently, and must not keep the answers. The answers are whole: a
// Shadow drops a comparison whose answer was cut at Options.MaxBodyBytes
// (DropTooLarge), so answer.Answer.Truncated is never set.
//
// Options.Comparer nil means the default Comparer, which needs nothing
// outside the standard library. It reports, in this order and as package
// compare's Compare does with the zero compare.Rules:
//   - an error on one side only (answer.KindError); errors on both sides are
//     equal;
//   - a redirect that one side followed and the other did not, or that
//     ended elsewhere (answer.KindRedirect), and nothing else then;
//   - different status codes (answer.KindStatus);
//   - different headers (answer.KindHeader, one per name, sorted), leaving out
//     Date, the hop-by-hop headers and those named by either side's
//     Connection header; Content-Length when the bodies differ or a side
//     decompressed transparently; and, when one side decompressed
//     transparently and the other did not, a single Content-Encoding
//     difference;
//   - different bodies (answer.KindBody), compared after gzip decoding (up to 16
//     MiB): as JSON values when both are JSON, where the order of object
//     keys does not matter and numbers compare by their text, one
//     difference per JSON path up to 20 and one counting the rest; else
//     byte for byte, one difference.
//
// Unlike compare's, the default fills no answer.Difference.Diff. For ignored
// headers or JSON paths, a Comparator per source schema or timing, use
// compare.ShadowComparer.
type Comparer interface {
	Compare(schema string, primary, candidate answer.Answer) []answer.Difference
}

// ComparerFunc is a function that is a Comparer.
type ComparerFunc func(schema string, primary, candidate answer.Answer) []answer.Difference

// Compare calls f.
func (f ComparerFunc) Compare(schema string, primary, candidate answer.Answer) []answer.Difference {
	return f(schema, primary, candidate)
}
