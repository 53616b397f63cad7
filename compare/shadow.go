package compare

import (
	"github.com/fusiongo/transport/answer"
	"github.com/fusiongo/transport/shadow"
)

// ShadowComparer returns a shadow.Comparer that compares by r, as Compare
// does, the primary named "legacy" and the candidate "sockets" in the
// explanations: for shadow mode with ignored headers or JSON paths, a
// Comparator per source schema, extra redacted headers or timing
// (transport.WithShadowComparer). With the zero Rules it reports what the
// default shadow.Comparer reports, and also fills answer.Difference.Diff.
// r is used as given; check it first with Validate, as a path that does
// not parse is skipped.
func ShadowComparer(r Rules) shadow.Comparer {
	return shadowComparer{r}
}

type shadowComparer struct{ rules Rules }

func (c shadowComparer) Compare(schema string, primary, candidate answer.Answer) []answer.Difference {
	return Compare(schema, primary, candidate, "legacy", "sockets", c.rules)
}
