package compare

import (
	"html/template"
	"io"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/fusiongo/transport/answer"
)

// htmlOpen is how many differing requests WriteHTML shows unfolded; the
// rest, and every identical request, sit folded in <details>, so that a
// page of thousands of requests stays quick to open and to scroll.
const htmlOpen = 20

// WriteHTML writes the report as one self-contained HTML page titled
// title (empty: "compare A vs B"); see WriteHTMLReports.
func (r *Report) WriteHTML(w io.Writer, title string) error {
	return WriteHTMLReports(w, title, r)
}

// WriteHTMLReports writes several reports, such as the pairs of a run that
// compares one side with each of the others, as one self-contained HTML
// page (inline style, no script, nothing loaded from anywhere): per pair
// its counts, a summary per source schema, the kinds, the grouped
// differences, then each differing request with every difference's
// explanation and the two sides' values side by side, the part that
// differs marked, and the JSON diff with its removed and added lines
// coloured. Identical requests are listed folded, per source schema.
// Like the JSON form it leaves out the bodies and headers themselves:
// the differences quote what matters of them (a sensitive header's
// value answer.Redacted). All text is escaped by html/template.
func WriteHTMLReports(w io.Writer, title string, reports ...*Report) error {
	if title == "" && len(reports) > 0 {
		title = "compare " + reports[0].A + " vs " + reports[0].B
	}
	page := htmlPage{Title: title, Style: template.CSS(htmlStyle)}
	for _, r := range reports {
		page.Pairs = append(page.Pairs, htmlPairOf(r))
	}
	return htmlTemplate.Execute(w, page)
}

type (
	htmlPage struct {
		Title string
		Style template.CSS
		Pairs []htmlPair
	}
	htmlPair struct {
		A, B      string
		Counts    Counts
		Kinds     []htmlKind
		Schemas   []htmlSchema
		Groups    []Group
		Different []htmlResult
	}
	htmlKind struct {
		Kind     answer.Kind
		Requests int
	}
	htmlSchema struct {
		Name      string
		Counts    Counts
		Identical []string // names of its identical requests, in corpus order
	}
	htmlResult struct {
		Open        bool
		Name        string
		Schema      string
		A, B        outcomeJSON
		Kinds       string
		Differences []htmlDifference
		Notes       []string
	}
	htmlDifference struct {
		answer.Difference
		HA, HB htmlMarked
		Lines  []htmlLine
	}
	// htmlMarked is a value cut where it differs from the other side's:
	// the common start, the differing middle, the common end.
	htmlMarked struct{ Pre, Mid, Post string }
	htmlLine   struct{ Class, Text string }
)

func htmlPairOf(r *Report) htmlPair {
	p := htmlPair{A: r.A, B: r.B, Counts: r.Counts(), Groups: r.Groups()}
	kc := r.KindCounts()
	for _, k := range kinds {
		p.Kinds = append(p.Kinds, htmlKind{k, kc[k]})
	}
	bySchema := map[string]*htmlSchema{}
	for i := range r.Results {
		res := &r.Results[i]
		s := bySchema[res.Schema]
		if s == nil {
			s = &htmlSchema{Name: res.Schema}
			bySchema[res.Schema] = s
		}
		s.Counts.Requests++
		switch {
		case !res.Identical():
			s.Counts.Different++
			p.Different = append(p.Different, htmlResultOf(res, len(p.Different) < htmlOpen))
		case res.BothFailed():
			s.Counts.Identical++
			s.Counts.BothFailed++
			s.Identical = append(s.Identical, res.Name)
		default:
			s.Counts.Identical++
			s.Identical = append(s.Identical, res.Name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(bySchema)) {
		p.Schemas = append(p.Schemas, *bySchema[name])
	}
	return p
}

func htmlResultOf(res *Result, open bool) htmlResult {
	h := htmlResult{Open: open, Name: res.Name, Schema: res.Schema, A: outcomeToJSON(&res.A), B: outcomeToJSON(&res.B), Notes: res.Notes}
	var ks []string
	for _, d := range res.Differences {
		if !slices.Contains(ks, string(d.Kind)) {
			ks = append(ks, string(d.Kind))
		}
		hd := htmlDifference{Difference: d}
		hd.HA, hd.HB = marked(d.A, d.B)
		for line := range strings.Lines(d.Diff) {
			line = strings.TrimSuffix(line, "\n")
			class := ""
			switch {
			case strings.HasPrefix(line, "-"):
				class = "del"
			case strings.HasPrefix(line, "+"):
				class = "ins"
			}
			hd.Lines = append(hd.Lines, htmlLine{class, line})
		}
		h.Differences = append(h.Differences, hd)
	}
	h.Kinds = strings.Join(ks, ", ")
	return h
}

// marked cuts a and b at their longest common start and end, on rune
// boundaries of both, so that the page can mark what differs between them.
func marked(a, b string) (htmlMarked, htmlMarked) {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	for pre > 0 && (pre < len(a) && !utf8.RuneStart(a[pre]) || pre < len(b) && !utf8.RuneStart(b[pre])) {
		pre--
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	for suf > 0 && (!utf8.RuneStart(a[len(a)-suf]) || !utf8.RuneStart(b[len(b)-suf])) {
		suf--
	}
	cut := func(s string) htmlMarked { return htmlMarked{s[:pre], s[pre : len(s)-suf], s[len(s)-suf:]} }
	return cut(a), cut(b)
}
