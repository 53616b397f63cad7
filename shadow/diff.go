package shadow

// The default Comparer: internal/answerdiff's comparison, the primary named
// "legacy" and the candidate "sockets". Package compare's Compare layers
// its Rules on the same core, so with the zero compare.Rules the two report
// the same (compare.TestShadowDefaultMatchesZeroRules), and an importer of
// package transport does not link the differential harness.

import "github.com/fusiongo/transport/internal/answerdiff"

var core = answerdiff.New(answerdiff.Options{A: "legacy", B: "sockets"})

type defaultComparer struct{}

func (defaultComparer) Compare(schema string, x, y Answer) []Difference {
	diffs, _ := core.Compare(schema, x.core(), y.core())
	if len(diffs) == 0 {
		return nil
	}
	out := make([]Difference, len(diffs))
	for i, d := range diffs {
		out[i] = Difference{Kind: Kind(d.Kind), Path: d.Path, A: d.A, B: d.B, Explanation: d.Explanation}
	}
	return out
}

// core is a as the comparison core sees it.
func (a *Answer) core() *answerdiff.Answer {
	return &answerdiff.Answer{
		Err: a.Err, Status: a.Status, Header: a.Header, Body: a.Body, Uncompressed: a.Uncompressed, URL: a.URL, FinalURL: a.FinalURL, Elapsed: a.Elapsed,
		Redirects: answerdiff.Map(a.Redirects, func(r Redirect) answerdiff.Redirect { return answerdiff.Redirect(r) }),
	}
}
