package transport

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The markers around the fenced list of stages in docs/design.md's
// "Pipeline" section.
const (
	pipelineBegin = "<!-- pipeline:begin -->"
	pipelineEnd   = "<!-- pipeline:end -->"
)

// TestPipelineDoc: the stages that docs/design.md's "Pipeline" section
// lists between its markers, and the first column of its stage table, are
// the stages a route's pipeline is built from, in the order layers.chain
// stacks them (pipelineOrder).
func TestPipelineDoc(t *testing.T) {
	b, err := os.ReadFile("docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	section, ok := docSection(doc, "## Pipeline\n")
	if !ok {
		t.Fatal(`docs/design.md has no "## Pipeline" section`)
	}
	if n := strings.Count(doc, pipelineBegin); n != 1 || strings.Count(section, pipelineBegin) != 1 {
		t.Fatalf("docs/design.md has %d %s markers; want one, in the Pipeline section", n, pipelineBegin)
	}
	list, err := fencedList(section)
	if err != nil {
		t.Fatal(err)
	}
	want := pipelineOrder()
	if diff := cmp.Diff(want, list); diff != "" {
		t.Errorf("docs/design.md's pipeline list differs from the code's order (-code +doc):\n%s", diff)
	}
	if diff := cmp.Diff(want, stageTable(section)); diff != "" {
		t.Errorf("docs/design.md's stage table differs from the code's order (-code +doc):\n%s", diff)
	}
}

// docSection returns the part of doc from heading to the next heading of
// the same level.
func docSection(doc, heading string) (string, bool) {
	_, rest, ok := strings.Cut(doc, "\n"+heading)
	if !ok {
		return "", false
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest, true
}

// fencedList returns the non-empty lines of the one fenced block between
// the pipeline markers of section, trimmed.
func fencedList(section string) ([]string, error) {
	_, rest, _ := strings.Cut(section, pipelineBegin)
	inner, _, ok := strings.Cut(rest, pipelineEnd)
	if !ok {
		return nil, fmt.Errorf("no %s after %s", pipelineEnd, pipelineBegin)
	}
	inner = strings.TrimSpace(inner)
	body, ok := strings.CutPrefix(inner, "```\n")
	if !ok || !strings.HasSuffix(body, "\n```") {
		return nil, fmt.Errorf("between the pipeline markers: want one fenced block, got:\n%s", inner)
	}
	var out []string
	for line := range strings.Lines(strings.TrimSuffix(body, "\n```")) {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out, nil
}

// stageTable returns the first column of the table whose header starts
// "| Stage |" in section.
func stageTable(section string) []string {
	_, rest, ok := strings.Cut(section, "\n| Stage |")
	if !ok {
		return nil
	}
	var out []string
	for i, line := range strings.Split(rest, "\n") {
		if i == 0 {
			continue // the rest of the header line
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		cell := strings.TrimSpace(strings.Split(line, "|")[1])
		if strings.Trim(cell, "-") == "" {
			continue // the delimiter row
		}
		out = append(out, cell)
	}
	return out
}
