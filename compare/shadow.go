package compare

import "github.com/fusiongo/transport/shadow"

// ShadowComparer returns a shadow.Comparer that compares by r, as Compare
// does, the primary named "legacy" and the candidate "sockets" in the
// explanations: for shadow mode with ignored headers or JSON paths, a
// Comparator per source schema, extra redacted headers or timing
// (transport.WithShadowComparer). With the zero Rules it reports what the
// default shadow.Comparer reports, and also fills Difference.Diff. r is
// used as given; check it first with Validate, as a path that does not
// parse is skipped.
func ShadowComparer(r Rules) shadow.Comparer {
	return shadowComparer{r}
}

type shadowComparer struct{ rules Rules }

func (c shadowComparer) Compare(schema string, primary, candidate shadow.Answer) []shadow.Difference {
	diffs := Compare(schema, fromAnswer(primary), fromAnswer(candidate), "legacy", "sockets", c.rules)
	if len(diffs) == 0 {
		return nil
	}
	out := make([]shadow.Difference, len(diffs))
	for i, d := range diffs {
		out[i] = shadow.Difference{Kind: shadow.Kind(d.Kind), Path: d.Path, A: d.A, B: d.B, Explanation: d.Explanation, Diff: d.Diff}
	}
	return out
}

// fromAnswer is a shadowed answer as an Outcome. A Shadow compares whole
// answers only, so it is never Truncated.
func fromAnswer(a shadow.Answer) Outcome {
	o := Outcome{
		Err: a.Err, Status: a.Status, Header: a.Header, Body: a.Body, Uncompressed: a.Uncompressed,
		URL: a.URL, FinalURL: a.FinalURL, Elapsed: a.Elapsed,
	}
	for _, r := range a.Redirects {
		o.Redirects = append(o.Redirects, Redirect{Status: r.Status, Location: r.Location})
	}
	return o
}
