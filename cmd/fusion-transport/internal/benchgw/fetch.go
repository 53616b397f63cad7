package benchgw

import (
	"encoding/json"
	"strings"
)

// group is one _entities fetch of the plan: the distinct keys of the entities
// at one path of the response tree, in first-seen order, and for each key
// every object of the tree that its answer fills. A zero group is empty and
// ready for add.
type group[T any] struct {
	keys    []string
	targets [][]*T
	index   map[string]int
}

// add records that t, whose key is key, waits for the fetch's answer.
func (g *group[T]) add(key string, t *T) {
	i, ok := g.index[key]
	if !ok {
		if g.index == nil {
			g.index = make(map[string]int)
		}
		i = len(g.keys)
		g.index[key] = i
		g.keys = append(g.keys, key)
		g.targets = append(g.targets, nil)
	}
	g.targets[i] = append(g.targets[i], t)
}

func (g *group[T]) empty() bool { return len(g.keys) == 0 }

// fill hands the i-th answer to every object waiting for the i-th key. An
// answer list shorter than the keys leaves the rest unfilled (null), and so
// does a null entity.
func fill[T, E any](g *group[T], answers []*E, set func(*T, *E)) {
	for i, e := range answers {
		if i >= len(g.targets) {
			return
		}
		if e == nil {
			continue
		}
		for _, t := range g.targets[i] {
			set(t, e)
		}
	}
}

// entitiesFetch is one alias of an alias-batched request.
type entitiesFetch struct {
	alias     string // also the name of its variable
	typename  string // the type condition
	selection string // the fields selected on it
	reps      any    // the representations, a slice that encoding/json writes as an array
}

// entitiesRequest builds the GraphQL request for fetches, one aliased
// _entities field each, with the representations as variables:
//
//	query($p0: [_Any!]!, $p1: [_Any!]!) {
//	  p0: _entities(representations: $p0) { ... on Product { name } }
//	  p1: _entities(representations: $p1) { ... on Product { name } }
//	}
func entitiesRequest(fetches []entitiesFetch) ([]byte, error) {
	var q strings.Builder
	q.WriteString("query(")
	for i, f := range fetches {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("$" + f.alias + ": [_Any!]!")
	}
	q.WriteString(") {")
	vars := make(map[string]any, len(fetches))
	for _, f := range fetches {
		q.WriteString(" " + f.alias + ": _entities(representations: $" + f.alias + ") { ... on " + f.typename + " { " + f.selection + " } }")
		vars[f.alias] = f.reps
	}
	q.WriteString(" }")
	return json.Marshal(graphqlRequest{Query: q.String(), Variables: vars})
}

// graphqlRequest is a GraphQL-over-HTTP request body.
type graphqlRequest struct {
	Query     string         `json:"query"`
	Variables map[string]any `json:"variables,omitempty"`
}

// answer is a source schema's GraphQL response.
type answer[D any] struct {
	Data   *D             `json:"data"`
	Errors []graphqlError `json:"errors"`
}

type graphqlError struct {
	Message string `json:"message"`
}

// userReps, productReps and stockReps turn a group's keys into
// representations.

func userReps[T any](g *group[T]) []userRep {
	out := make([]userRep, len(g.keys))
	for i, k := range g.keys {
		out[i] = userRep{Typename: "User", ID: k}
	}
	return out
}

func productReps[T any](g *group[T]) []productRep {
	out := make([]productRep, len(g.keys))
	for i, k := range g.keys {
		out[i] = productRep{Typename: "Product", UPC: k}
	}
	return out
}

// stockReps takes price and weight from the first object of each key: a
// product's price and weight depend on its upc alone (products owns them), so
// every object with that key carries the same ones.
func stockReps(g *group[productFields]) []stockRep {
	out := make([]stockRep, len(g.keys))
	for i, k := range g.keys {
		p := g.targets[i][0]
		out[i] = stockRep{Typename: "Product", UPC: k, Price: p.Price, Weight: p.Weight}
	}
	return out
}
