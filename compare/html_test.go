package compare

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/fusiongo/transport/answer"
)

func TestMarked(t *testing.T) {
	tests := []struct {
		a, b         string
		wantA, wantB htmlMarked
	}{
		{`"Ann"`, `"Anna"`, htmlMarked{`"Ann`, ``, `"`}, htmlMarked{`"Ann`, `a`, `"`}},
		{"200", "500", htmlMarked{"", "2", "00"}, htmlMarked{"", "5", "00"}},
		{"same", "same", htmlMarked{"same", "", ""}, htmlMarked{"same", "", ""}},
		{"", "x", htmlMarked{"", "", ""}, htmlMarked{"", "x", ""}},
		// é and è share their first byte: the cut stays on a rune start.
		{"café", "cafè", htmlMarked{"caf", "é", ""}, htmlMarked{"caf", "è", ""}},
		{"aXa", "aa", htmlMarked{"a", "X", "a"}, htmlMarked{"a", "", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.a+"|"+tt.b, func(t *testing.T) {
			ga, gb := marked(tt.a, tt.b)
			if ga != tt.wantA || gb != tt.wantB {
				t.Errorf("marked(%q, %q) = %+v, %+v; want %+v, %+v", tt.a, tt.b, ga, gb, tt.wantA, tt.wantB)
			}
			if ga.Pre+ga.Mid+ga.Post != tt.a || gb.Pre+gb.Mid+gb.Post != tt.b {
				t.Errorf("the pieces do not make the values again")
			}
		})
	}
}

// TestWriteHTMLEscapes: a value that looks like markup is text on the
// page, and the page loads nothing.
func TestWriteHTMLEscapes(t *testing.T) {
	r := &Report{A: "legacy", B: "sockets", Results: []Result{{Name: "<script>x</script>", Schema: "products",
		Differences: []answer.Difference{{Kind: answer.KindBody, Path: "data.a", A: `"<img src=http://evil/>"`, B: `"b"`, Explanation: "x"}}}}}
	var buf bytes.Buffer
	if err := r.WriteHTML(&buf, ""); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, bad := range []string{"<script", "<img"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q:\n%s", bad, page)
		}
	}
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	for n := range doc.Descendants() {
		for _, a := range n.Attr {
			if a.Key == "src" || a.Key == "href" {
				t.Errorf("<%s %s=%q>: the page must load nothing", n.Data, a.Key, a.Val)
			}
		}
	}
}
