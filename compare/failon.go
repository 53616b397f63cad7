package compare

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/fusiongo/transport/answer"
)

// FailOnGrammar describes the thresholds ParseFailOn accepts, for a
// command's help.
const FailOnGrammar = `A -fail-on spec is "any" (fail on any difference, the default), "none"
(never fail), or comma-separated thresholds, each KIND>N (fail when more
than N requests have a difference of that kind) or KIND>N% (more than N
percent of the requests). KIND is status, header, body, error, redirect,
timing, or total (a difference of any kind). Example: status>0,body>2%`

// FailOn says when a Report fails a check such as a CI job: limits on how
// many requests have a difference of a kind. The zero value never fails,
// like "none". See ParseFailOn.
type FailOn struct {
	// Limits are the thresholds; a report breaches FailOn when it
	// breaches any of them. None: nothing fails.
	Limits []Limit
}

// Limit is one threshold of a FailOn.
type Limit struct {
	// Kind is the kind of difference counted; empty counts requests with
	// a difference of any kind ("total").
	Kind answer.Kind

	// Max is the most requests allowed to have the difference, or with
	// Percent the most percent of the report's requests.
	Max float64
	// Percent makes Max a percentage of the report's requests.
	Percent bool
}

// String writes the limit as ParseFailOn reads it, e.g. "body>2%".
func (l Limit) String() string {
	s := l.kindName() + ">" + strconv.FormatFloat(l.Max, 'f', -1, 64)
	if l.Percent {
		s += "%"
	}
	return s
}

func (l Limit) kindName() string {
	if l.Kind == "" {
		return "total"
	}
	return string(l.Kind)
}

// ParseFailOn parses a spec (see FailOnGrammar): "any", "none", or
// thresholds such as "status>0,body>2%". Case and space around items do not
// matter. An error names the spec and the item at fault.
func ParseFailOn(spec string) (FailOn, error) {
	trimmed := strings.ToLower(strings.TrimSpace(spec))
	switch trimmed {
	case "any":
		return FailOn{Limits: []Limit{{Max: 0}}}, nil
	case "none":
		return FailOn{}, nil
	case "":
		return FailOn{}, fmt.Errorf("invalid fail-on spec %q: empty; want any, none or thresholds such as status>0,body>2%%", spec)
	}
	var f FailOn
	for item := range strings.SplitSeq(trimmed, ",") {
		item = strings.TrimSpace(item)
		l, err := parseLimit(item)
		if err != nil {
			return FailOn{}, fmt.Errorf("invalid fail-on spec %q: %w", spec, err)
		}
		f.Limits = append(f.Limits, l)
	}
	return f, nil
}

func parseLimit(item string) (Limit, error) {
	if item == "" {
		return Limit{}, errors.New("an empty threshold between commas")
	}
	if item == "any" || item == "none" {
		return Limit{}, fmt.Errorf("%q stands alone, not among thresholds", item)
	}
	kind, value, ok := strings.Cut(item, ">")
	if !ok {
		return Limit{}, fmt.Errorf("threshold %q: want KIND>N or KIND>N%%, such as body>2%%", item)
	}
	kind, value = strings.TrimSpace(kind), strings.TrimSpace(value)
	var l Limit
	switch answer.Kind(kind) {
	case answer.KindStatus, answer.KindHeader, answer.KindBody, answer.KindError, answer.KindRedirect, answer.KindTiming:
		l.Kind = answer.Kind(kind)
	case "total":
	default:
		return Limit{}, fmt.Errorf("threshold %q: unknown kind %q: want status, header, body, error, redirect, timing or total", item, kind)
	}
	value, l.Percent = strings.CutSuffix(value, "%")
	n, err := strconv.ParseFloat(value, 64)
	if err != nil || value == "" || !isDecimal(value) {
		return Limit{}, fmt.Errorf("threshold %q: %q is not a number of requests (like 3) or a percentage (like 2.5%%)", item, value)
	}
	switch {
	case l.Percent && n > 100:
		return Limit{}, fmt.Errorf("threshold %q: %s%% is more than 100%%, so it could never be exceeded", item, value)
	case !l.Percent && n != float64(int64(n)):
		return Limit{}, fmt.Errorf("threshold %q: %s is not a whole number of requests; for a share write %s%%", item, value, value)
	}
	l.Max = n
	return l, nil
}

// isDecimal reports whether s is digits with at most one decimal point,
// which rules out what ParseFloat also takes: signs, exponents, hex, Inf,
// NaN and underscores.
func isDecimal(s string) bool {
	digits, point := 0, false
	for _, c := range []byte(s) {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !point:
			point = true
		default:
			return false
		}
	}
	return digits > 0
}

// String writes f as ParseFailOn reads it: "none", or its limits joined by
// commas ("total>0" for "any").
func (f FailOn) String() string {
	if len(f.Limits) == 0 {
		return "none"
	}
	parts := make([]string, len(f.Limits))
	for i, l := range f.Limits {
		parts[i] = l.String()
	}
	return strings.Join(parts, ",")
}

// Breach is a Limit that a Report exceeds.
type Breach struct {
	// Limit is the threshold that was passed.
	Limit Limit `json:"-"`

	// Threshold is the Limit as written, e.g. "body>2%".
	Threshold string `json:"threshold"`

	// Requests of Of requests (the report's) have a difference of the
	// limit's kind.
	Requests int `json:"requests"`
	Of       int `json:"of"`
}

// String says what was exceeded: "body>2%: 3 of 50 requests (6%) have a
// body difference".
func (b Breach) String() string {
	what := "a difference"
	if b.Limit.Kind != "" {
		what = "a " + string(b.Limit.Kind) + " difference"
	}
	verb := "have"
	if b.Requests == 1 {
		verb = "has"
	}
	return fmt.Sprintf("%s: %d of %d %s (%s%%) %s %s",
		b.Threshold, b.Requests, b.Of, plural(b.Of, "request", "requests"),
		strconv.FormatFloat(percent(b.Requests, b.Of), 'f', -1, 64), verb, what)
}

// percent is n of total in percent, to two decimals; zero of nothing.
func percent(n, total int) float64 {
	if total == 0 {
		return 0
	}
	p := 100 * float64(n) / float64(total)
	return float64(int64(p*100+0.5)) / 100
}

// Check returns the limits r exceeds, in the order of f.Limits; none means
// r passes.
func (f FailOn) Check(r *Report) []Breach {
	if len(f.Limits) == 0 {
		return nil
	}
	byKind := r.KindCounts()
	c := r.Counts()
	var breaches []Breach
	for _, l := range f.Limits {
		n := c.Different
		if l.Kind != "" {
			n = byKind[l.Kind]
		}
		over := float64(n) > l.Max
		if l.Percent {
			over = c.Requests > 0 && 100*float64(n) > l.Max*float64(c.Requests)
		}
		if over {
			breaches = append(breaches, Breach{Limit: l, Threshold: l.String(), Requests: n, Of: c.Requests})
		}
	}
	return breaches
}
