package answerdiff

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/fusiongo/transport/answer"
)

// sensitive are redacted whatever else is: they carry credentials or
// sessions.
var sensitive = []string{"Authorization", "Cookie", "Set-Cookie", "Proxy-Authorization"}

// RedactSet returns the canonical names of Authorization, Cookie,
// Set-Cookie, Proxy-Authorization and extra, as a set for Options.Redact
// and RedactHeader.
func RedactSet(extra []string) map[string]bool {
	set := make(map[string]bool, len(sensitive)+len(extra))
	for _, name := range sensitive {
		set[name] = true
	}
	for _, name := range extra {
		set[http.CanonicalHeaderKey(name)] = true
	}
	return set
}

// RedactHeader returns a copy of h in which the values of the headers in
// set are answer.Redacted. A nil h gives nil.
func RedactHeader(h http.Header, set map[string]bool) http.Header {
	if h == nil {
		return nil
	}
	out := make(http.Header, len(h))
	for name, values := range h {
		if set[http.CanonicalHeaderKey(name)] {
			redacted := make([]string, len(values))
			for i := range redacted {
				redacted[i] = answer.Redacted
			}
			values = redacted
		} else {
			values = slices.Clone(values)
		}
		out[name] = values
	}
	return out
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
	"Transfer-Encoding", // net/http moves it to Response.TransferEncoding; a fake sender may not
	"Upgrade",
}

func contentEncoding(a *answer.Answer) string {
	return strings.ToLower(strings.TrimSpace(a.Header.Get("Content-Encoding")))
}

func isGzip(encoding string) bool { return encoding == "gzip" || encoding == "x-gzip" }

// transparentDifference is the one difference reported when decoder
// decompressed a body transparently and encoded returned it encoded.
// swapped says that decoder is side B.
func transparentDifference(decoderName, encodedName string, decoder, encoded *answer.Answer, swapped bool) *answer.Difference {
	enc := encoded.Header.Get("Content-Encoding")
	expl := fmt.Sprintf("%s decompressed a body transparently; %s returned it encoded (Content-Encoding: %s), which compare cannot decode", decoderName, encodedName, enc)
	if isGzip(contentEncoding(encoded)) {
		expl = fmt.Sprintf("%s decompressed a gzip body transparently; %s returned it compressed (Content-Encoding: %s)", decoderName, encodedName, enc)
	}
	d := &answer.Difference{Kind: answer.KindHeader, Path: "Content-Encoding", A: decoder.Header.Get("Content-Encoding"), B: enc, Explanation: expl}
	if swapped {
		d.A, d.B = d.B, d.A
	}
	return d
}

// comparableHeader returns a canonicalised copy of h without the headers
// that are not compared.
func (c *Comparer) comparableHeader(h http.Header, dropped map[string]bool) map[string][]string {
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

func (c *Comparer) headerDifferences(xh, yh http.Header, skip map[string]bool) []answer.Difference {
	dropped := map[string]bool{"Date": true} // differs by the second it was sent
	for _, name := range hopByHop {
		dropped[name] = true
	}
	for name := range skip {
		dropped[name] = true
	}
	// Headers named by either side's Connection header are dropped from
	// both, as RFC 9110, section 7.6.1 asks of a proxy.
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

	var diffs []answer.Difference
	for _, name := range unionKeys(x, y) {
		xv, xok := x[name]
		yv, yok := y[name]
		if !xok || !yok || !slices.Equal(xv, yv) {
			diffs = append(diffs, c.headerDifference(name, xv, yv, xok, yok))
		}
	}
	return diffs
}

func (c *Comparer) headerDifference(name string, xv, yv []string, xok, yok bool) answer.Difference {
	d := answer.Difference{Kind: answer.KindHeader, Path: name, A: strings.Join(xv, ", "), B: strings.Join(yv, ", ")}
	if c.redact[name] {
		// Compared by value, published without it.
		d.A, d.B = redactValue(xok), redactValue(yok)
		if xok && yok {
			d.Explanation = fmt.Sprintf("%s and %s have different %s values (%s)", c.a, c.b, name, answer.Redacted)
			return d
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
	return d
}

// redactValue stands in for a sensitive header's value: answer.Redacted if the
// side has the header, empty if not.
func redactValue(present bool) string {
	if present {
		return answer.Redacted
	}
	return ""
}
