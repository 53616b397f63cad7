package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/google/go-cmp/cmp"
)

// decodeJSON decodes b if it is exactly one JSON value. Numbers stay
// json.Number, so they compare by their text, without float rounding.
func decodeJSON(b []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return v, true
}

// pathDiff is one JSON path at which two values differ. A value is absent
// (hasX or hasY false) where an object lacks the member or an array is
// shorter.
type pathDiff struct {
	path       string
	x, y       any
	hasX, hasY bool
}

// jsonWalk collects up to limit paths at which x and y differ and counts
// them all.
type jsonWalk struct {
	limit int
	diffs []pathDiff
	total int
}

func (w *jsonWalk) add(d pathDiff) {
	w.total++
	if len(w.diffs) < w.limit {
		w.diffs = append(w.diffs, d)
	}
}

func (w *jsonWalk) walk(path string, x, y any) {
	switch xv := x.(type) {
	case map[string]any:
		if yv, ok := y.(map[string]any); ok {
			w.walkObject(path, xv, yv)
			return
		}
	case []any:
		if yv, ok := y.([]any); ok {
			w.walkArray(path, xv, yv)
			return
		}
	default:
		if !isContainer(y) && x == y { // string, json.Number, bool or nil: comparable
			return
		}
	}
	w.add(pathDiff{path: path, x: x, y: y, hasX: true, hasY: true})
}

func isContainer(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

func (w *jsonWalk) walkObject(path string, x, y map[string]any) {
	keys := make([]string, 0, len(x)+len(y))
	for k := range x {
		keys = append(keys, k)
	}
	for k := range y {
		if _, ok := x[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		xv, hasX := x[k]
		yv, hasY := y[k]
		p := memberPath(path, k)
		if hasX && hasY {
			w.walk(p, xv, yv)
		} else {
			w.add(pathDiff{path: p, x: xv, y: yv, hasX: hasX, hasY: hasY})
		}
	}
}

func (w *jsonWalk) walkArray(path string, x, y []any) {
	for i := range max(len(x), len(y)) {
		p := path + "[" + strconv.Itoa(i) + "]"
		switch {
		case i < len(x) && i < len(y):
			w.walk(p, x[i], y[i])
		case i < len(x):
			w.add(pathDiff{path: p, x: x[i], hasX: true})
		default:
			w.add(pathDiff{path: p, y: y[i], hasY: true})
		}
	}
}

// memberPath appends an object member to a path: data.users for an
// identifier (every GraphQL name is one), data["content-type"] otherwise.
func memberPath(path, key string) string {
	if !isIdentifier(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range []byte(s) {
		letter := c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// jsonDifferences lists the paths at which two JSON bodies differ, the
// first carrying cmp.Diff's text of the whole bodies.
func (c *comparer) jsonDifferences(x, y any) []Difference {
	w := jsonWalk{limit: c.maxPaths}
	w.walk("", x, y)
	if w.total == 0 {
		return nil
	}
	diffs := make([]Difference, 0, len(w.diffs)+1)
	for _, pd := range w.diffs {
		path := pd.path
		where := "at " + path
		if path == "" {
			path, where = "$", "as the whole body"
		}
		d := Difference{Kind: KindBody, Path: path}
		if pd.hasX {
			d.A = jsonText(pd.x)
		}
		if pd.hasY {
			d.B = jsonText(pd.y)
		}
		switch {
		case !pd.hasX:
			d.Explanation = fmt.Sprintf("%s has nothing %s; %s has %s", c.a, where, c.b, d.B)
		case !pd.hasY:
			d.Explanation = fmt.Sprintf("%s has %s %s; %s has nothing there", c.a, d.A, where, c.b)
		default:
			d.Explanation = fmt.Sprintf("%s has %s %s; %s has %s", c.a, d.A, where, c.b, d.B)
		}
		diffs = append(diffs, d)
	}
	diffs[0].Diff = cmp.Diff(x, y)
	if more := w.total - len(w.diffs); more > 0 {
		diffs = append(diffs, Difference{
			Kind:        KindBody,
			Explanation: fmt.Sprintf("and %d more JSON %s between %s and %s", more, plural(more, "path differs", "paths differ"), c.a, c.b),
		})
	}
	return diffs
}

// jsonText writes a decoded JSON value back as compact JSON, cut to a
// readable length.
func jsonText(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v) // cannot happen for a value json decoded
	}
	return clip(strings.TrimSuffix(buf.String(), "\n"), 120)
}

// clip cuts s to at most n runes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
