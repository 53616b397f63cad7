package answerdiff

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/fusiongo/transport/answer"
)

// decodedBody returns a's body as the comparison sees it: gzip decoded if
// the side left it encoded. If it does not decode, the body is compared as
// received and the note says why.
func (c *Comparer) decodedBody(name string, a *answer.Answer) (body []byte, note string) {
	if a.Uncompressed || !isGzip(contentEncoding(a)) {
		return a.Body, ""
	}
	zr, err := gzip.NewReader(bytes.NewReader(a.Body))
	if err != nil {
		return a.Body, fmt.Sprintf("the %s body says Content-Encoding: gzip but does not decode (%v), so it is compared as received", name, err)
	}
	decoded, truncated, err := ReadCapped(zr, c.maxBody)
	if err != nil {
		return a.Body, fmt.Sprintf("the %s body says Content-Encoding: gzip but does not decode (%v), so it is compared as received", name, err)
	}
	if truncated {
		note = fmt.Sprintf("the decoded %s body was cut at %d bytes (Options.MaxBodyBytes)", name, c.maxBody)
	}
	return decoded, note
}

// Body is the default body comparison: as JSON values (JSON) if both
// bodies are JSON, else as bytes (Bytes).
func (c *Comparer) Body(x, y []byte) []answer.Difference {
	xv, xok := DecodeJSON(x)
	yv, yok := DecodeJSON(y)
	if xok && yok {
		return c.JSON(xv, yv)
	}
	return c.Bytes(x, y, xok, yok)
}

// Bytes compares two bodies byte for byte: no difference, or one that
// quotes both from a little before the first byte that differs. xJSON and
// yJSON say which of them is JSON, which the explanation mentions.
func (c *Comparer) Bytes(x, y []byte, xJSON, yJSON bool) []answer.Difference {
	if bytes.Equal(x, y) {
		return nil
	}
	off := 0
	for off < len(x) && off < len(y) && x[off] == y[off] {
		off++
	}
	expl := fmt.Sprintf("the bodies differ from byte %d on (%s: %d bytes, %s: %d bytes)", off, c.a, len(x), c.b, len(y))
	switch {
	case xJSON:
		expl += fmt.Sprintf(" and only the %s body is JSON", c.a)
	case yJSON:
		expl += fmt.Sprintf(" and only the %s body is JSON", c.b)
	}
	return []answer.Difference{{Kind: answer.KindBody, A: excerpt(x, off), B: excerpt(y, off), Explanation: expl}}
}

// excerpt quotes the bytes of b around off, the first byte that differs.
func excerpt(b []byte, off int) string {
	start := max(0, off-16)
	end := min(len(b), off+48)
	if start >= end {
		return ""
	}
	s := strconv.Quote(string(b[start:end]))
	if start > 0 {
		s = "…" + s
	}
	if end < len(b) {
		s += "…"
	}
	return s
}

// DecodeJSON decodes b if it is exactly one JSON value. Numbers stay
// json.Number, so they compare by their text, without float rounding.
func DecodeJSON(b []byte) (any, bool) {
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

// JSON lists the paths at which two decoded JSON values (DecodeJSON)
// differ, up to Options.MaxPaths of them, and then one difference that
// counts the rest.
func (c *Comparer) JSON(x, y any) []answer.Difference {
	w := jsonWalk{limit: c.maxPaths}
	w.walk("", x, y)
	if w.total == 0 {
		return nil
	}
	diffs := make([]answer.Difference, 0, len(w.diffs)+1)
	for _, pd := range w.diffs {
		path := pd.path
		where := "at " + path
		if path == "" {
			path, where = "$", "as the whole body"
		}
		d := answer.Difference{Kind: answer.KindBody, Path: path}
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
	if more := w.total - len(w.diffs); more > 0 {
		noun := "paths differ"
		if more == 1 {
			noun = "path differs"
		}
		diffs = append(diffs, answer.Difference{Kind: answer.KindBody, Explanation: fmt.Sprintf("and %d more JSON %s between %s and %s", more, noun, c.a, c.b)})
	}
	return diffs
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
	for _, k := range unionKeys(x, y) {
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

// unionKeys returns the keys of x and y, sorted.
func unionKeys[V any](x, y map[string]V) []string {
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
	return keys
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

// jsonText writes a decoded JSON value back as compact JSON, cut to 120
// runes.
func jsonText(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v) // cannot happen for a value json decoded
	}
	return Clip(strings.TrimSuffix(buf.String(), "\n"), 120)
}

// Clip cuts s to at most n runes, marking the cut with "…".
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
