package shadow

// The default Comparer: internal/answerdiff's comparison, the primary named
// "legacy" and the candidate "sockets". Package compare's Compare layers
// its Rules on the same core, so with the zero compare.Rules the two report
// the same (compare.TestShadowDefaultMatchesZeroRules), and an importer of
// package transport does not link the differential harness.

import (
	"github.com/fusiongo/transport/answer"
	"github.com/fusiongo/transport/internal/answerdiff"
)

var core = answerdiff.New(answerdiff.Options{A: "legacy", B: "sockets"})

type defaultComparer struct{}

func (defaultComparer) Compare(schema string, x, y answer.Answer) []answer.Difference {
	diffs, _ := core.Compare(schema, &x, &y)
	return diffs
}
