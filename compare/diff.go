package compare

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/fusiongo/transport/answer"
	"github.com/fusiongo/transport/internal/answerdiff"
	"github.com/google/go-cmp/cmp"
)

// comparer holds what every comparison of a run needs: the comparison core
// (internal/answerdiff) and the Rules layered on it. It is read-only while
// the run's workers use it.
type comparer struct {
	a, b        string // side names
	maxBody     int64
	core        *answerdiff.Comparer
	redact      map[string]bool // canonical header names whose values are never published
	paths       [][]segment     // Rules.IgnorePaths, parsed
	comparators map[string]Comparator
	timingRatio float64
	timingMin   time.Duration
}

func newComparer(a, b string, rules *Rules, maxBody int64, maxPaths int) *comparer {
	c := &comparer{
		a: a, b: b, maxBody: maxBody,
		redact:      answerdiff.RedactSet(rules.Redact),
		comparators: rules.Comparators,
		timingRatio: rules.TimingRatio,
		timingMin:   rules.TimingMin,
	}
	ignore := make(map[string]bool, len(rules.IgnoreHeaders))
	for _, name := range rules.IgnoreHeaders {
		ignore[http.CanonicalHeaderKey(name)] = true
	}
	for _, p := range rules.IgnorePaths {
		if segs, err := parsePath(p); err == nil { // Validate reports the others
			c.paths = append(c.paths, segs)
		}
	}
	c.core = answerdiff.New(answerdiff.Options{
		A: a, B: b, MaxBodyBytes: maxBody, MaxPaths: maxPaths,
		Ignore: ignore, Redact: c.redact, Body: c.bodyDifferences,
	})
	return c
}

// result compares x (side a's answer) with y (side b's) for a request named
// name to schema.
func (c *comparer) result(name, schema string, x, y answer.Answer) Result {
	res := Result{Name: name, Schema: schema, A: x, B: y}
	for _, side := range []struct {
		name string
		o    *answer.Answer
	}{{c.a, &res.A}, {c.b, &res.B}} {
		if side.o.Truncated {
			res.Notes = append(res.Notes, fmt.Sprintf("the %s body was cut at %d bytes (Options.MaxBodyBytes)", side.name, c.maxBody))
		}
	}
	if x.Err != "" && y.Err != "" {
		res.Notes = append(res.Notes, fmt.Sprintf("both sides failed, which counts as identical; %s: %s; %s: %s", c.a, x.Err, c.b, y.Err))
		return res
	}
	diffs, notes := c.core.Compare(schema, &x, &y)
	res.Notes = append(res.Notes, notes...)
	res.Differences = diffs
	if len(diffs) == 1 && (diffs[0].Kind == answer.KindError || diffs[0].Kind == answer.KindRedirect) {
		return res // the core compared nothing else, nor does timing
	}
	if d, ok := c.timingDifference(&x, &y); ok {
		res.Differences = append(res.Differences, d)
	}
	return res
}

// bodyDifferences compares two decoded bodies with schema's Comparator if
// it has one, else as JSON values without Rules.IgnorePaths if both are
// JSON, the first difference carrying cmp.Diff's text of the whole bodies,
// else as bytes.
func (c *comparer) bodyDifferences(schema string, xb, yb []byte) []answer.Difference {
	if fn := c.comparators[schema]; fn != nil {
		equal, expl := fn(xb, yb)
		if equal {
			return nil
		}
		if expl == "" {
			expl = fmt.Sprintf("the comparator of source schema %q found the bodies different", schema)
		}
		return []answer.Difference{{
			Kind: answer.KindBody, A: clip(strconv.Quote(string(xb)), 120), B: clip(strconv.Quote(string(yb)), 120),
			Explanation: fmt.Sprintf("%s (%s: %d bytes, %s: %d bytes)", expl, c.a, len(xb), c.b, len(yb)),
		}}
	}
	xv, xok := answerdiff.DecodeJSON(xb)
	yv, yok := answerdiff.DecodeJSON(yb)
	if !xok || !yok {
		return c.core.Bytes(xb, yb, xok, yok)
	}
	var xEmptied, yEmptied bool
	xv, xEmptied = prune(xv, c.paths)
	yv, yEmptied = prune(yv, c.paths)
	if xEmptied && yEmptied {
		return nil // everything the bodies held is ignored
	}
	diffs := c.core.JSON(xv, yv)
	if len(diffs) > 0 {
		diffs[0].Diff = cmp.Diff(xv, yv)
	}
	return diffs
}

// clip cuts s to at most n runes, marking the cut.
func clip(s string, n int) string { return answerdiff.Clip(s, n) }
