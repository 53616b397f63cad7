package compare

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// comparer holds what every comparison of a run needs. It is read-only
// while the run's workers use it.
type comparer struct {
	a, b        string // side names
	maxBody     int64
	maxPaths    int
	ignore      map[string]bool // canonical header names left out besides the fixed ones
	redact      map[string]bool // canonical header names whose values are never published
	paths       [][]segment     // Rules.IgnorePaths, parsed
	comparators map[string]Comparator
	timingRatio float64
	timingMin   time.Duration
}

func newComparer(a, b string, rules *Rules, maxBody int64, maxPaths int) *comparer {
	c := &comparer{
		a: a, b: b, maxBody: maxBody, maxPaths: maxPaths,
		ignore:      make(map[string]bool, len(rules.IgnoreHeaders)),
		redact:      redactSet(rules.Redact),
		comparators: rules.Comparators,
		timingRatio: rules.TimingRatio,
		timingMin:   rules.TimingMin,
	}
	for _, name := range rules.IgnoreHeaders {
		c.ignore[http.CanonicalHeaderKey(name)] = true
	}
	for _, p := range rules.IgnorePaths {
		if segs, err := parsePath(p); err == nil { // Validate reports the others
			c.paths = append(c.paths, segs)
		}
	}
	return c
}

// result compares x (side a's answer) with y (side b's) for a request named
// name to schema.
func (c *comparer) result(name, schema string, x, y Outcome) Result {
	res := Result{Name: name, Schema: schema, A: x, B: y}
	for _, side := range []struct {
		name string
		o    *Outcome
	}{{c.a, &res.A}, {c.b, &res.B}} {
		if side.o.Truncated {
			res.Notes = append(res.Notes, fmt.Sprintf("the %s body was cut at %d bytes (Options.MaxBodyBytes)", side.name, c.maxBody))
		}
	}

	switch {
	case x.Err != "" && y.Err != "":
		res.Notes = append(res.Notes, fmt.Sprintf("both sides failed, which counts as identical; %s: %s; %s: %s", c.a, x.Err, c.b, y.Err))
		return res
	case x.Err != "" || y.Err != "":
		res.Differences = []Difference{c.errorDifference(&x, &y)}
		return res
	}
	if d, ok := c.redirectDifference(&x, &y); ok {
		res.Differences = []Difference{d}
		return res
	}

	var diffs []Difference
	if x.Status != y.Status {
		diffs = append(diffs, Difference{
			Kind:        KindStatus,
			A:           strconv.Itoa(x.Status),
			B:           strconv.Itoa(y.Status),
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
	var encodingDiff *Difference
	switch {
	case x.Uncompressed && contentEncoding(&y) != "":
		encodingDiff = c.transparentDifference(c.a, c.b, &x, &y, false)
	case y.Uncompressed && contentEncoding(&x) != "":
		encodingDiff = c.transparentDifference(c.b, c.a, &y, &x, true)
	}
	if encodingDiff != nil {
		skip["Content-Encoding"] = true
	}

	xb, xnote := c.decodedBody(c.a, &x)
	yb, ynote := c.decodedBody(c.b, &y)
	for _, n := range []string{xnote, ynote} {
		if n != "" {
			res.Notes = append(res.Notes, n)
		}
	}
	if !bytes.Equal(xb, yb) {
		// Content-Length follows from the bytes: a body difference says
		// more, and bodies that only differ where the rules look away
		// (IgnorePaths, a Comparator, JSON key order) are no difference.
		skip["Content-Length"] = true
	}
	bodyDiffs := c.bodyDifferences(schema, xb, yb)

	headerDiffs := c.headerDifferences(x.Header, y.Header, skip)
	if encodingDiff != nil {
		headerDiffs = append(headerDiffs, *encodingDiff)
		slices.SortStableFunc(headerDiffs, func(p, q Difference) int { return strings.Compare(p.Path, q.Path) })
	}
	res.Differences = append(append(diffs, headerDiffs...), bodyDiffs...)
	if d, ok := c.timingDifference(&x, &y); ok {
		res.Differences = append(res.Differences, d)
	}
	return res
}

func (c *comparer) errorDifference(x, y *Outcome) Difference {
	failed, answered, f, o := c.a, c.b, x, y
	if x.Err == "" {
		failed, answered, f, o = c.b, c.a, y, x
	}
	return Difference{
		Kind:        KindError,
		A:           x.Err,
		B:           y.Err,
		Explanation: fmt.Sprintf("%s failed: %s; %s answered %d", failed, f.Err, answered, o.Status),
	}
}

// redirected reports whether o's answer came from somewhere other than where
// the request was sent.
func (o *Outcome) redirected() bool {
	return len(o.Redirects) > 0 || (o.URL != "" && o.FinalURL != "" && o.URL != o.FinalURL)
}

// redirectDifference reports a redirect that only one side followed, or
// followed to a different place.
func (c *comparer) redirectDifference(x, y *Outcome) (Difference, bool) {
	xr, yr := x.redirected(), y.redirected()
	endsDiffer := x.FinalURL != "" && y.FinalURL != "" && x.FinalURL != y.FinalURL
	if xr == yr && !endsDiffer {
		return Difference{}, false
	}
	var expl string
	switch {
	case xr && !yr:
		expl = followed(c.a, x, y) + "; " + returned(c.b, y, x)
	case yr && !xr:
		expl = followed(c.b, y, x) + "; " + returned(c.a, x, y)
	case xr && yr:
		expl = followed(c.a, x, nil) + "; " + followed(c.b, y, nil)
	default:
		expl = fmt.Sprintf("%s answered from %s; %s answered from %s", c.a, x.FinalURL, c.b, y.FinalURL)
	}
	return Difference{Kind: KindRedirect, A: endURL(x), B: endURL(y), Explanation: expl}, true
}

func endURL(o *Outcome) string {
	if o.FinalURL != "" {
		return o.FinalURL
	}
	return o.URL
}

// followed phrases what the side that was redirected did. other, if not
// nil, is the side that returned the redirect itself, whose status and
// Location stand in when the follower's Invoker kept no redirect chain.
func followed(name string, f, other *Outcome) string {
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

// returned phrases what the side that was not redirected did, given the
// follower f.
func returned(name string, o, f *Outcome) string {
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

// shortURL writes target relative to from when both are on the same origin,
// as a Location header usually does.
func shortURL(target, from string) string {
	t, err1 := url.Parse(target)
	f, err2 := url.Parse(from)
	if err1 != nil || err2 != nil || t.Scheme != f.Scheme || t.Host != f.Host {
		return target
	}
	return t.RequestURI()
}

func contentEncoding(o *Outcome) string {
	return strings.ToLower(strings.TrimSpace(o.Header.Get("Content-Encoding")))
}

func isGzip(encoding string) bool { return encoding == "gzip" || encoding == "x-gzip" }

// transparentDifference is the one difference reported when decoder
// decompressed a body transparently and encoded returned it encoded.
// swapped says that decoder is side b.
func (c *comparer) transparentDifference(decoderName, encodedName string, decoder, encoded *Outcome, swapped bool) *Difference {
	enc := encoded.Header.Get("Content-Encoding")
	var expl string
	if isGzip(contentEncoding(encoded)) {
		expl = fmt.Sprintf("%s decompressed a gzip body transparently; %s returned it compressed (Content-Encoding: %s)", decoderName, encodedName, enc)
	} else {
		expl = fmt.Sprintf("%s decompressed a body transparently; %s returned it encoded (Content-Encoding: %s), which compare cannot decode", decoderName, encodedName, enc)
	}
	d := &Difference{Kind: KindHeader, Path: "Content-Encoding", A: decoder.Header.Get("Content-Encoding"), B: enc, Explanation: expl}
	if swapped {
		d.A, d.B = d.B, d.A
	}
	return d
}

// decodedBody returns o's body as the comparison sees it: gzip decoded if
// the side left it encoded. If it does not decode, the body is compared as
// received and the note says why.
func (c *comparer) decodedBody(name string, o *Outcome) (body []byte, note string) {
	if o.Uncompressed || !isGzip(contentEncoding(o)) {
		return o.Body, ""
	}
	zr, err := gzip.NewReader(bytes.NewReader(o.Body))
	if err != nil {
		return o.Body, fmt.Sprintf("the %s body says Content-Encoding: gzip but does not decode (%v), so it is compared as received", name, err)
	}
	decoded, truncated, err := readCapped(zr, c.maxBody)
	if err != nil {
		return o.Body, fmt.Sprintf("the %s body says Content-Encoding: gzip but does not decode (%v), so it is compared as received", name, err)
	}
	if truncated {
		note = fmt.Sprintf("the decoded %s body was cut at %d bytes (Options.MaxBodyBytes)", name, c.maxBody)
	}
	return decoded, note
}

// hopByHop are the response headers that describe one connection rather
// than the answer, after RFC 9110, section 7.6.1, and RFC 2616, section
// 13.5.1. They are left out of the comparison: the two sides use
// different connections by design.
var hopByHop = []string{
	"Connection",
	"Keep-Alive",
	"Proxy-Connection", // not standard, but still sent by old proxies and clients
	"Proxy-Authenticate",
	"Proxy-Authorization",
	"Te",
	"Trailer",
	"Transfer-Encoding", // net/http moves it to Response.TransferEncoding; a fake Invoker may not
	"Upgrade",
}

// comparableHeader returns a canonicalised copy of h without the headers
// that are not compared. Headers named by either side's Connection header
// are dropped from both (dropped names), as a proxy would drop them.
func (c *comparer) comparableHeader(h http.Header, dropped map[string]bool) map[string][]string {
	out := make(map[string][]string, len(h))
	for name, values := range h {
		name = http.CanonicalHeaderKey(name)
		if dropped[name] || c.ignore[name] {
			continue
		}
		out[name] = append(out[name], values...)
	}
	return out
}

func (c *comparer) headerDifferences(xh, yh http.Header, skip map[string]bool) []Difference {
	dropped := map[string]bool{"Date": true} // differs by the second it was sent
	for _, name := range hopByHop {
		dropped[name] = true
	}
	for name := range skip {
		dropped[name] = true
	}
	// The Connection header's options first, then the fixed list, as
	// RFC 9110, section 7.6.1 asks of a proxy.
	for _, h := range []http.Header{xh, yh} {
		for _, v := range h.Values("Connection") {
			for opt := range strings.SplitSeq(v, ",") {
				if opt = strings.TrimSpace(opt); opt != "" {
					dropped[http.CanonicalHeaderKey(opt)] = true
				}
			}
		}
	}
	x, y := c.comparableHeader(xh, dropped), c.comparableHeader(yh, dropped)

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
		d := Difference{Kind: KindHeader, Path: name, A: strings.Join(xv, ", "), B: strings.Join(yv, ", ")}
		if c.redact[name] {
			// Compared by value, published without it.
			d.A, d.B = redactValue(xok), redactValue(yok)
			if xok && yok {
				d.Explanation = fmt.Sprintf("%s and %s have different %s values (%s)", c.a, c.b, name, Redacted)
				diffs = append(diffs, d)
				continue
			}
		}
		switch {
		case !xok:
			d.Explanation = fmt.Sprintf("%s has no %s; %s has %q", c.a, name, c.b, d.B)
		case !yok:
			d.Explanation = fmt.Sprintf("%s has %s %q; %s has none", c.a, name, d.A, c.b)
		default:
			d.Explanation = fmt.Sprintf("%s has %s %q; %s has %q", c.a, name, d.A, c.b, d.B)
		}
		diffs = append(diffs, d)
	}
	return diffs
}

// redactValue stands in for a sensitive header's value: Redacted if the
// side has the header, empty if not.
func redactValue(present bool) string {
	if present {
		return Redacted
	}
	return ""
}

// bodyDifferences compares two bodies with schema's Comparator if it has
// one, else as JSON values if both are JSON, else as bytes.
func (c *comparer) bodyDifferences(schema string, xb, yb []byte) []Difference {
	if fn := c.comparators[schema]; fn != nil {
		equal, expl := fn(xb, yb)
		if equal {
			return nil
		}
		if expl == "" {
			expl = fmt.Sprintf("the comparator of source schema %q found the bodies different", schema)
		}
		return []Difference{{
			Kind: KindBody, A: clip(strconv.Quote(string(xb)), 120), B: clip(strconv.Quote(string(yb)), 120),
			Explanation: fmt.Sprintf("%s (%s: %d bytes, %s: %d bytes)", expl, c.a, len(xb), c.b, len(yb)),
		}}
	}
	xv, xok := decodeJSON(xb)
	yv, yok := decodeJSON(yb)
	if xok && yok {
		var xEmptied, yEmptied bool
		xv, xEmptied = prune(xv, c.paths)
		yv, yEmptied = prune(yv, c.paths)
		if xEmptied && yEmptied {
			return nil // everything the bodies held is ignored
		}
		return c.jsonDifferences(xv, yv)
	}
	if bytes.Equal(xb, yb) {
		return nil
	}
	off := 0
	for off < len(xb) && off < len(yb) && xb[off] == yb[off] {
		off++
	}
	expl := fmt.Sprintf("the bodies differ from byte %d on (%s: %d bytes, %s: %d bytes)", off, c.a, len(xb), c.b, len(yb))
	switch {
	case xok:
		expl += fmt.Sprintf(" and only the %s body is JSON", c.a)
	case yok:
		expl += fmt.Sprintf(" and only the %s body is JSON", c.b)
	}
	return []Difference{{Kind: KindBody, A: excerpt(xb, off), B: excerpt(yb, off), Explanation: expl}}
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
