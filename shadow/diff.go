package shadow

// The default Comparer. It reports what package compare's Compare reports
// with the zero compare.Rules, without the go-cmp text diff, so that an
// importer of package transport does not link the differential harness.
// compare's tests hold the two to the same results
// (compare.TestShadowDefaultMatchesZeroRules).

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

const (
	nameA, nameB   = "legacy", "sockets" // the primary and the candidate in explanations
	maxDecodedBody = 16 << 20            // compare.DefaultMaxBodyBytes
	maxPaths       = 20                  // compare.DefaultMaxPaths
)

// sensitive are the headers whose values no Difference carries.
var sensitive = map[string]bool{"Authorization": true, "Cookie": true, "Set-Cookie": true, "Proxy-Authorization": true}

// hopByHop are the response headers that describe one connection rather
// than the answer (RFC 9110, section 7.6.1); they are not compared.
var hopByHop = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

type defaultComparer struct{}

func (defaultComparer) Compare(_ string, x, y Answer) []Difference {
	switch {
	case x.Err != "" && y.Err != "":
		return nil
	case x.Err != "" || y.Err != "":
		return []Difference{errorDifference(&x, &y)}
	}
	if d, ok := redirectDifference(&x, &y); ok {
		return []Difference{d}
	}
	var diffs []Difference
	if x.Status != y.Status {
		diffs = append(diffs, Difference{
			Kind: KindStatus, A: strconv.Itoa(x.Status), B: strconv.Itoa(y.Status),
			Explanation: fmt.Sprintf("%s answered %d; %s answered %d", nameA, x.Status, nameB, y.Status),
		})
	}
	// Transparent decompression drops Content-Encoding and Content-Length.
	skip := make(map[string]bool)
	if x.Uncompressed || y.Uncompressed {
		skip["Content-Length"] = true
	}
	var encodingDiff *Difference
	switch {
	case x.Uncompressed && contentEncoding(&y) != "":
		encodingDiff = transparentDifference(nameA, nameB, &x, &y, false)
	case y.Uncompressed && contentEncoding(&x) != "":
		encodingDiff = transparentDifference(nameB, nameA, &y, &x, true)
	}
	if encodingDiff != nil {
		skip["Content-Encoding"] = true
	}
	xb, yb := decodedBody(&x), decodedBody(&y)
	if !bytes.Equal(xb, yb) {
		skip["Content-Length"] = true
	}
	bodyDiffs := bodyDifferences(xb, yb)
	headerDiffs := headerDifferences(x.Header, y.Header, skip)
	if encodingDiff != nil {
		headerDiffs = append(headerDiffs, *encodingDiff)
		slices.SortStableFunc(headerDiffs, func(p, q Difference) int { return strings.Compare(p.Path, q.Path) })
	}
	return append(append(diffs, headerDiffs...), bodyDiffs...)
}

func errorDifference(x, y *Answer) Difference {
	failed, answered, f, o := nameA, nameB, x, y
	if x.Err == "" {
		failed, answered, f, o = nameB, nameA, y, x
	}
	return Difference{Kind: KindError, A: x.Err, B: y.Err, Explanation: fmt.Sprintf("%s failed: %s; %s answered %d", failed, f.Err, answered, o.Status)}
}

func (a *Answer) redirected() bool {
	return len(a.Redirects) > 0 || (a.URL != "" && a.FinalURL != "" && a.URL != a.FinalURL)
}

func redirectDifference(x, y *Answer) (Difference, bool) {
	xr, yr := x.redirected(), y.redirected()
	endsDiffer := x.FinalURL != "" && y.FinalURL != "" && x.FinalURL != y.FinalURL
	if xr == yr && !endsDiffer {
		return Difference{}, false
	}
	var expl string
	switch {
	case xr && !yr:
		expl = followed(nameA, x, y) + "; " + returned(nameB, y, x)
	case yr && !xr:
		expl = followed(nameB, y, x) + "; " + returned(nameA, x, y)
	case xr && yr:
		expl = followed(nameA, x, nil) + "; " + followed(nameB, y, nil)
	default:
		expl = fmt.Sprintf("%s answered from %s; %s answered from %s", nameA, x.FinalURL, nameB, y.FinalURL)
	}
	return Difference{Kind: KindRedirect, A: endURL(x), B: endURL(y), Explanation: expl}, true
}

func endURL(a *Answer) string {
	if a.FinalURL != "" {
		return a.FinalURL
	}
	return a.URL
}

// followed phrases what the redirected side f did; other, if not nil, is
// the side that returned the redirect itself.
func followed(name string, f, other *Answer) string {
	switch len(f.Redirects) {
	case 0:
		if other != nil && isRedirect(other.Status) {
			return fmt.Sprintf("%s followed a %d to %s and got a %d", name, other.Status, other.Header.Get("Location"), f.Status)
		}
		return fmt.Sprintf("%s was redirected to %s and got a %d", name, shortURL(f.FinalURL, f.URL), f.Status)
	case 1:
		return fmt.Sprintf("%s followed a %d to %s and got a %d", name, f.Redirects[0].Status, f.Redirects[0].Location, f.Status)
	default:
		return fmt.Sprintf("%s followed %d redirects, the first a %d to %s, to %s and got a %d",
			name, len(f.Redirects), f.Redirects[0].Status, f.Redirects[0].Location, shortURL(f.FinalURL, f.URL), f.Status)
	}
}

// returned phrases what the side o that was not redirected did, given the
// follower f.
func returned(name string, o, f *Answer) string {
	if !isRedirect(o.Status) {
		return fmt.Sprintf("%s was not redirected and answered %d", name, o.Status)
	}
	loc := o.Header.Get("Location")
	if len(f.Redirects) == 0 || (f.Redirects[0].Status == o.Status && f.Redirects[0].Location == loc) {
		return fmt.Sprintf("%s returned the %d", name, o.Status)
	}
	return fmt.Sprintf("%s returned a %d to %s", name, o.Status, loc)
}

func isRedirect(status int) bool { return status >= 300 && status < 400 }

// shortURL writes target relative to from when both are on one origin.
func shortURL(target, from string) string {
	t, err1 := url.Parse(target)
	f, err2 := url.Parse(from)
	if err1 != nil || err2 != nil || t.Scheme != f.Scheme || t.Host != f.Host {
		return target
	}
	return t.RequestURI()
}

func contentEncoding(a *Answer) string {
	return strings.ToLower(strings.TrimSpace(a.Header.Get("Content-Encoding")))
}

func isGzip(encoding string) bool { return encoding == "gzip" || encoding == "x-gzip" }

func transparentDifference(decoderName, encodedName string, decoder, encoded *Answer, swapped bool) *Difference {
	enc := encoded.Header.Get("Content-Encoding")
	expl := fmt.Sprintf("%s decompressed a body transparently; %s returned it encoded (Content-Encoding: %s), which compare cannot decode", decoderName, encodedName, enc)
	if isGzip(contentEncoding(encoded)) {
		expl = fmt.Sprintf("%s decompressed a gzip body transparently; %s returned it compressed (Content-Encoding: %s)", decoderName, encodedName, enc)
	}
	d := &Difference{Kind: KindHeader, Path: "Content-Encoding", A: decoder.Header.Get("Content-Encoding"), B: enc, Explanation: expl}
	if swapped {
		d.A, d.B = d.B, d.A
	}
	return d
}

// decodedBody returns a's body gzip decoded if the side left it encoded,
// or as received if it does not decode.
func decodedBody(a *Answer) []byte {
	if a.Uncompressed || !isGzip(contentEncoding(a)) {
		return a.Body
	}
	zr, err := gzip.NewReader(bytes.NewReader(a.Body))
	if err != nil {
		return a.Body
	}
	decoded, _, err := readCapped(zr, maxDecodedBody)
	if err != nil {
		return a.Body
	}
	return decoded
}

func headerDifferences(xh, yh http.Header, skip map[string]bool) []Difference {
	dropped := map[string]bool{"Date": true}
	for _, name := range hopByHop {
		dropped[name] = true
	}
	for name := range skip {
		dropped[name] = true
	}
	for _, h := range []http.Header{xh, yh} {
		for _, v := range h.Values("Connection") {
			for opt := range strings.SplitSeq(v, ",") {
				if opt = strings.TrimSpace(opt); opt != "" {
					dropped[http.CanonicalHeaderKey(opt)] = true
				}
			}
		}
	}
	x, y := comparableHeader(xh, dropped), comparableHeader(yh, dropped)
	names := make([]string, 0, len(x)+len(y))
	for name := range x {
		names = append(names, name)
	}
	for name := range y {
		if _, ok := x[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var diffs []Difference
	for _, name := range names {
		xv, xok := x[name]
		yv, yok := y[name]
		if xok && yok && slices.Equal(xv, yv) {
			continue
		}
		diffs = append(diffs, headerDifference(name, xv, yv, xok, yok))
	}
	return diffs
}

func headerDifference(name string, xv, yv []string, xok, yok bool) Difference {
	d := Difference{Kind: KindHeader, Path: name, A: strings.Join(xv, ", "), B: strings.Join(yv, ", ")}
	if sensitive[name] {
		d.A, d.B = redactValue(xok), redactValue(yok)
		if xok && yok {
			d.Explanation = fmt.Sprintf("%s and %s have different %s values (%s)", nameA, nameB, name, Redacted)
			return d
		}
	}
	switch {
	case !xok:
		d.Explanation = fmt.Sprintf("%s has no %s; %s has %q", nameA, name, nameB, d.B)
	case !yok:
		d.Explanation = fmt.Sprintf("%s has %s %q; %s has none", nameA, name, d.A, nameB)
	default:
		d.Explanation = fmt.Sprintf("%s has %s %q; %s has %q", nameA, name, d.A, nameB, d.B)
	}
	return d
}

func comparableHeader(h http.Header, dropped map[string]bool) map[string][]string {
	out := make(map[string][]string, len(h))
	for name, values := range h {
		name = http.CanonicalHeaderKey(name)
		if !dropped[name] {
			out[name] = append(out[name], values...)
		}
	}
	return out
}

func redactValue(present bool) string {
	if present {
		return Redacted
	}
	return ""
}

// bodyDifferences compares two bodies as JSON values if both are JSON,
// else as bytes.
func bodyDifferences(xb, yb []byte) []Difference {
	xv, xok := decodeJSON(xb)
	yv, yok := decodeJSON(yb)
	if xok && yok {
		return jsonDifferences(xv, yv)
	}
	if bytes.Equal(xb, yb) {
		return nil
	}
	off := 0
	for off < len(xb) && off < len(yb) && xb[off] == yb[off] {
		off++
	}
	expl := fmt.Sprintf("the bodies differ from byte %d on (%s: %d bytes, %s: %d bytes)", off, nameA, len(xb), nameB, len(yb))
	switch {
	case xok:
		expl += fmt.Sprintf(" and only the %s body is JSON", nameA)
	case yok:
		expl += fmt.Sprintf(" and only the %s body is JSON", nameB)
	}
	return []Difference{{Kind: KindBody, A: excerpt(xb, off), B: excerpt(yb, off), Explanation: expl}}
}

// excerpt quotes the bytes of b around off, the first byte that differs.
func excerpt(b []byte, off int) string {
	start, end := max(0, off-16), min(len(b), off+48)
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

// decodeJSON decodes b if it is exactly one JSON value, numbers as
// json.Number.
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

// pathDiff is one JSON path at which two values differ; a value is absent
// (hasX or hasY false) where an object lacks the member or an array is
// shorter.
type pathDiff struct {
	path       string
	x, y       any
	hasX, hasY bool
}

// jsonWalk collects up to maxPaths paths at which two values differ and
// counts them all.
type jsonWalk struct {
	diffs []pathDiff
	total int
}

func (w *jsonWalk) add(d pathDiff) {
	w.total++
	if len(w.diffs) < maxPaths {
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
		if !isContainer(y) && x == y {
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
// identifier, data["content-type"] otherwise.
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

func jsonDifferences(x, y any) []Difference {
	var w jsonWalk
	w.walk("", x, y)
	if w.total == 0 {
		return nil
	}
	diffs := make([]Difference, 0, len(w.diffs)+1)
	for _, pd := range w.diffs {
		path, where := pd.path, "at "+pd.path
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
			d.Explanation = fmt.Sprintf("%s has nothing %s; %s has %s", nameA, where, nameB, d.B)
		case !pd.hasY:
			d.Explanation = fmt.Sprintf("%s has %s %s; %s has nothing there", nameA, d.A, where, nameB)
		default:
			d.Explanation = fmt.Sprintf("%s has %s %s; %s has %s", nameA, d.A, where, nameB, d.B)
		}
		diffs = append(diffs, d)
	}
	if more := w.total - len(w.diffs); more > 0 {
		noun := "paths differ"
		if more == 1 {
			noun = "path differs"
		}
		diffs = append(diffs, Difference{Kind: KindBody, Explanation: fmt.Sprintf("and %d more JSON %s between %s and %s", more, noun, nameA, nameB)})
	}
	return diffs
}

// jsonText writes a decoded JSON value back as compact JSON, cut to 120
// runes.
func jsonText(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	s := strings.TrimSuffix(buf.String(), "\n")
	if r := []rune(s); len(r) > 120 {
		return string(r[:119]) + "…"
	}
	return s
}
