package compare

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/fusiongo/transport/answer"
)

// Group is one difference that several requests share: the same kind, path
// and explanation.
type Group struct {
	// Kind, Path and Explanation are those of the differences the group
	// holds, which are equal in all three.
	Kind        answer.Kind `json:"kind"`
	Path        string      `json:"path,omitempty"`
	Explanation string      `json:"explanation"`

	// Requests names the requests that have the difference, in corpus
	// order, each once.
	Requests []string `json:"requests"`
}

// groupKey is what makes two differences the same.
type groupKey struct {
	kind              answer.Kind
	path, explanation string
}

// Groups gathers identical differences across the report's requests: one
// Group per kind, path and explanation, the largest first, then in the order
// they first appear.
func (r *Report) Groups() []Group {
	index := make(map[groupKey]int)
	var groups []Group
	for i := range r.Results {
		res := &r.Results[i]
		for _, d := range res.Differences {
			k := groupKey{d.Kind, d.Path, d.Explanation}
			g, ok := index[k]
			if !ok {
				g = len(groups)
				index[k] = g
				groups = append(groups, Group{Kind: d.Kind, Path: d.Path, Explanation: d.Explanation})
			}
			if reqs := groups[g].Requests; len(reqs) == 0 || reqs[len(reqs)-1] != res.Name {
				groups[g].Requests = append(reqs, res.Name)
			}
		}
	}
	slices.SortStableFunc(groups, func(a, b Group) int { return len(b.Requests) - len(a.Requests) })
	return groups
}

// GroupListed is how many request names WriteGroups lists under a group
// before it counts the rest.
const GroupListed = 5

// WriteGroups prints the report's Groups as text, a group as its difference
// with the number of requests that have it, and under it their names, the
// first GroupListed of them:
//
//	body data.name: legacy has "Ann" at data.name; sockets has "Anna" (7 requests)
//	     reviews/1, reviews/2, reviews/3, reviews/4, reviews/5 and 2 more
//
// It prints nothing for a report without differences.
func (r *Report) WriteGroups(w io.Writer) error {
	groups := r.Groups()
	if len(groups) == 0 {
		return nil
	}
	bw := bufio.NewWriter(w)
	c := r.Counts()
	fmt.Fprintf(bw, "%d distinct %s in %d %s:\n",
		len(groups), plural(len(groups), "difference", "differences"), c.Different, plural(c.Different, "request", "requests"))
	for _, g := range groups {
		label := string(g.Kind)
		if g.Path != "" {
			label += " " + g.Path
		}
		n := len(g.Requests)
		fmt.Fprintf(bw, "%s: %s (%d %s)\n", label, g.Explanation, n, plural(n, "request", "requests"))
		fmt.Fprintf(bw, "     %s\n", listNames(g.Requests, GroupListed))
	}
	return bw.Flush()
}

// listNames joins the first n names and counts the rest.
func listNames(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

// KindCounts counts, per answer.Kind, the requests that have at least one
// difference of that kind. Every kind has an entry.
func (r *Report) KindCounts() map[answer.Kind]int {
	counts := make(map[answer.Kind]int, len(kinds))
	for _, k := range kinds {
		counts[k] = 0
	}
	for i := range r.Results {
		seen := make(map[answer.Kind]bool, 2)
		for _, d := range r.Results[i].Differences {
			if !seen[d.Kind] {
				seen[d.Kind] = true
				counts[d.Kind]++
			}
		}
	}
	return counts
}
