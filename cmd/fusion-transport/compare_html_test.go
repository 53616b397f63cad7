package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// comparePage is what a test reads of a compare -html page, per pair.
type comparePage struct {
	a, b      string
	counts    map[string]int            // the pair's counts row, by data-k
	schemas   map[string]map[string]int // per source schema, by data-k
	kinds     map[string]int
	groups    int
	different []string       // the data-name of each differing request
	identical map[string]int // data-count per source schema
}

func parseComparePage(t *testing.T, raw []byte) []comparePage {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatalf("the page does not parse: %v", err)
	}
	var pages []comparePage
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode {
			continue
		}
		for _, a := range n.Attr {
			if a.Key == "src" || a.Key == "href" {
				t.Errorf("<%s %s=%q>: the page must load nothing", n.Data, a.Key, a.Val)
			}
		}
		if n.Data != "section" || attrOf(n, "class") != "pair" {
			continue
		}
		p := comparePage{a: attrOf(n, "data-a"), b: attrOf(n, "data-b"), counts: map[string]int{},
			schemas: map[string]map[string]int{}, kinds: map[string]int{}, identical: map[string]int{}}
		for m := range n.Descendants() {
			if m.Type != html.ElementNode {
				continue
			}
			switch cls := attrOf(m, "class"); {
			case m.Data == "table" && cls == "counts":
				cellsInto(t, m, p.counts)
			case m.Data == "tr" && cls == "schema":
				p.schemas[attrOf(m, "data-schema")] = cellsInto(t, m, map[string]int{})
			case m.Data == "td" && attrOf(m, "data-kind") != "":
				p.kinds[attrOf(m, "data-kind")] = atoiText(t, m)
			case m.Data == "tr" && cls == "group":
				p.groups++
			case m.Data == "details" && cls == "result":
				p.different = append(p.different, attrOf(m, "data-name"))
			case m.Data == "details" && cls == "identical":
				n, err := strconv.Atoi(attrOf(m, "data-count"))
				if err != nil {
					t.Errorf("data-count: %v", err)
				}
				p.identical[attrOf(m, "data-schema")] = n
			}
		}
		pages = append(pages, p)
	}
	return pages
}

// cellsInto reads the data-k cells under n as numbers into m.
func cellsInto(t *testing.T, n *html.Node, m map[string]int) map[string]int {
	for c := range n.Descendants() {
		if k := attrOf(c, "data-k"); c.Type == html.ElementNode && k != "" {
			m[k] = atoiText(t, c)
		}
	}
	return m
}

func atoiText(t *testing.T, n *html.Node) int {
	var b strings.Builder
	for c := range n.Descendants() {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	v, err := strconv.Atoi(strings.TrimSpace(b.String()))
	if err != nil {
		t.Errorf("cell %q: %v", b.String(), err)
	}
	return v
}

func attrOf(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// compareJSONPair is what a test reads of one pair of the -json report.
type compareJSONPair struct {
	Report struct {
		A, B   string
		Counts struct {
			Requests, Identical, Different int
			BothFailed                     int `json:"both_failed"`
		}
		Kinds   map[string]int
		Groups  []json.RawMessage
		Results []struct {
			Name, Schema string
			Identical    bool
		}
	}
}

// TestCompareHTML runs compare with -html and -json, on a configuration
// whose sides differ (with secrets in the configuration and the corpus)
// and on the embedded default with three sides, and checks that the page
// holds the numbers of the JSON report of the same run, and no secret.
func TestCompareHTML(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the embedded default")
	}
	cfgFile, corpusFile := compareSetup(t)
	raw, err := os.ReadFile(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	secretCfg := strings.Replace(string(raw), "url: http://", "url: http://svc:"+urlSecret+"@", 1) +
		"    headers:\n      set: {X-Api-Key: " + setSecretSchema + "}\n"
	if err := os.WriteFile(cfgFile, []byte(secretCfg), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		args  []string
		pairs int
	}{
		{"differences and secrets", []string{"-config", cfgFile, "-corpus", corpusFile, "-fail-on", "none"}, 1},
		{"embedded default, three sides", []string{"-sides", "legacy,sockets:nethttp,sockets:h1"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			htmlFile, jsonFile := filepath.Join(dir, "compare.html"), filepath.Join(dir, "compare.json")
			code, stdout, stderr := runCmd(append([]string{"compare", "-html", htmlFile, "-json", jsonFile}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			page, err := os.ReadFile(htmlFile)
			if err != nil {
				t.Fatal(err)
			}
			for _, secret := range []string{"SECRET", urlSecret, setSecretSchema} {
				if strings.Contains(string(page), secret) {
					t.Errorf("the page holds secret %q", secret)
				}
			}
			js, err := os.ReadFile(jsonFile)
			if err != nil {
				t.Fatal(err)
			}
			var pairs []compareJSONPair
			if tt.pairs == 1 {
				var one compareJSONPair
				err = json.Unmarshal(js, &one)
				pairs = append(pairs, one)
			} else {
				var all struct{ Pairs []compareJSONPair }
				err = json.Unmarshal(js, &all)
				pairs = all.Pairs
			}
			if err != nil {
				t.Fatalf("JSON: %v", err)
			}
			got := parseComparePage(t, page)
			if len(got) != tt.pairs || len(pairs) != tt.pairs {
				t.Fatalf("page has %d pairs, JSON %d; want %d", len(got), len(pairs), tt.pairs)
			}
			for i, p := range got {
				r := pairs[i].Report
				if p.a != r.A || p.b != r.B {
					t.Errorf("pair %d: page %s vs %s, JSON %s vs %s", i, p.a, p.b, r.A, r.B)
				}
				want := map[string]int{"requests": r.Counts.Requests, "identical": r.Counts.Identical, "different": r.Counts.Different, "both_failed": r.Counts.BothFailed}
				if !equalInts(p.counts, want) {
					t.Errorf("pair %d counts: page %v, JSON %v", i, p.counts, want)
				}
				if !equalInts(p.kinds, r.Kinds) || p.groups != len(r.Groups) {
					t.Errorf("pair %d: page kinds %v, %d groups; JSON %v, %d", i, p.kinds, p.groups, r.Kinds, len(r.Groups))
				}
				perSchema := map[string]map[string]int{}
				var different []string
				identical := map[string]int{}
				for _, res := range r.Results {
					m := perSchema[res.Schema]
					if m == nil {
						m = map[string]int{"requests": 0, "identical": 0, "different": 0}
						perSchema[res.Schema] = m
					}
					m["requests"]++
					if res.Identical {
						m["identical"]++
						identical[res.Schema]++
					} else {
						m["different"]++
						different = append(different, res.Name)
					}
				}
				for name, m := range p.schemas {
					delete(m, "both_failed") // not in the JSON per result; the pair's row checks it
					if !equalInts(m, perSchema[name]) {
						t.Errorf("pair %d schema %s: page %v, JSON %v", i, name, m, perSchema[name])
					}
				}
				if len(p.schemas) != len(perSchema) || strings.Join(p.different, ",") != strings.Join(different, ",") || !equalInts(p.identical, identical) {
					t.Errorf("pair %d: page %d schemas, differing %v, identical %v; JSON %d, %v, %v",
						i, len(p.schemas), p.different, p.identical, len(perSchema), different, identical)
				}
			}
		})
	}
}

// equalInts compares two count maps, a missing key as zero.
func equalInts(a, b map[string]int) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}
