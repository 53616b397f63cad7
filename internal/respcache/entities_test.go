package respcache

import (
	"strings"
	"testing"

	"github.com/fusiongo/transport/internal/testsupport/race"
)

// TestEntityRequest: a body is taken apart only if it is an _entities
// query; Only keeps the body as sent but for the representations; entity
// key bodies tell representations and the other variables apart, and
// not the order of a representation's members.
func TestEntityRequest(t *testing.T) {
	body := `{"query":"query($representations:[_Any!]!,$x:Int){_entities(representations:$representations){...on P{id}}}","variables":{"representations":[{"__typename":"P","id":"1"},{"id":"2","__typename":"P"},{"__typename":"P","id":"3"}],"x":7},"operationName":"E"}`
	r, ok := ParseEntityRequest([]byte(body))
	if !ok || len(r.Reps) != 3 {
		t.Fatalf("ParseEntityRequest: ok %t", ok)
	}
	only, _ := r.Only([]int{2, 0})
	want := `{"query":"query($representations:[_Any!]!,$x:Int){_entities(representations:$representations){...on P{id}}}","variables":{"representations":[{"__typename":"P","id":"3"},{"__typename":"P","id":"1"}],"x":7},"operationName":"E"}`
	if string(only) != want {
		t.Errorf("Only:\n%s\nwant\n%s", only, want)
	}
	b0, _ := r.EntityBody(0)
	b1, _ := r.EntityBody(1)
	other, _ := ParseEntityRequest([]byte(`{"query":"query($representations:[_Any!]!,$x:Int){_entities(representations:$representations){...on P{id}}}","variables":{"representations":[{"id":"2","__typename":"P"}],"x":8},"operationName":"E"}`))
	o0, _ := other.EntityBody(0)
	same, _ := ParseEntityRequest([]byte(`{"query":"query($representations:[_Any!]!,$x:Int){_entities(representations:$representations){...on P{id}}}","variables":{"representations":[{"__typename":"P","id":"2"}],"x":7},"operationName":"E"}`))
	s0, _ := same.EntityBody(0)
	switch {
	case string(b0) == string(b1):
		t.Error("two representations have one key body")
	case string(b1) == string(o0):
		t.Error("another value of x has the same key body")
	case string(b1) != string(s0):
		t.Error("the order of a representation's members changes its key body")
	}
	for _, bad := range []string{`{"query":"{ _entities }","variables":{"representations":[]}}`, `{"query":"{ a }","variables":{"representations":[{}]}}`,
		`{"query":"_entities","variables":{"representations":[{}]`, `not json _entities representations`, `{"query":1,"variables":{"representations":[{}]},"x":"_entities"}`} {
		if _, ok := ParseEntityRequest([]byte(bad)); ok {
			t.Errorf("%s taken for an _entities query", bad)
		}
	}
}

// TestEntityBodyAllocs: a representation whose members are not in order
// (a gateway writes the key's fields, then the @requires ones) costs its
// key body and no decoding: at most 2 allocations (the body and the
// members' order).
func TestEntityBodyAllocs(t *testing.T) {
	r, ok := ParseEntityRequest([]byte(`{"query":"query($representations:[_Any!]!){_entities(representations:$representations){...on Product{inStock shippingEstimate}}}","variables":{"representations":[{"__typename":"Product","upc":"1","weight":100,"price":899}]}}`))
	if !ok {
		t.Fatal("not an _entities query")
	}
	if n := testing.AllocsPerRun(100, func() { r.EntityBody(0) }); n > 2 {
		t.Errorf("EntityBody: %.0f allocations, want at most 2", n)
	}
}

// TestEntityBodyCanonical: representations equal as JSON values but for
// the order of their members (at any depth) and white space have one key
// body; any other difference, two. A name written with an escape or
// written twice takes encoding/json's reading (the last of twice), so
// that two representations a decoder tells apart never share a key body.
func TestEntityBodyCanonical(t *testing.T) {
	keyBody := func(rep string) string {
		r, ok := ParseEntityRequest([]byte(`{"query":"query($representations:[_Any!]!){_entities(representations:$representations){...on P{id}}}","variables":{"representations":[` + rep + `]}}`))
		if !ok {
			t.Fatalf("%s: not an _entities query", rep)
		}
		b, ok := r.EntityBody(0)
		if !ok {
			t.Fatalf("%s: no key body", rep)
		}
		return string(b)
	}
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{`{"__typename":"P","id":"1"}`, `{"id":"1","__typename":"P"}`, true},
		{`{"__typename":"P","id":"1"}`, `{ "__typename" : "P" ,	"id":"1" }`, true},
		{`{"a":{"c":[1,{"e":2,"d":3}],"b":null}}`, `{"a":{"b":null,"c":[1,{"d":3,"e":2}]}}`, true},
		{`{"a":"<b>"}`, `{ "a":"<b>"}`, true},
		{`{"a\u0062":1}`, `{"ab":1}`, true},
		{`{"__typename":"P","id":"1"}`, `{"__typename":"P","id":"2"}`, false},
		{`{"a":[1,2]}`, `{"a":[2,1]}`, false},
		{`{"a":1,"a":2}`, `{"a":2,"a":1}`, false},
		{`{"a":1,"a":2}`, `{"a":2}`, true},
		{`{"a\u0062":1,"ab":2}`, `{"ab":2,"a\u0062":1}`, false},
		{`{"a":"x y"}`, `{"a":"xy"}`, false},
	} {
		if got := keyBody(tc.a) == keyBody(tc.b); got != tc.same {
			t.Errorf("%s and %s: one key body %t, want %t", tc.a, tc.b, got, tc.same)
		}
	}
}

// TestEntityBodySize: a representation's key body holds a digest of the
// query text, not the text: each representation of a long query costs
// the hashing of its own bytes and 32 more, not the query again.
func TestEntityBodySize(t *testing.T) {
	long := strings.Repeat("x ", 4096)
	r, ok := ParseEntityRequest([]byte(`{"query":"query($representations:[_Any!]!){_entities(representations:$representations){...on P{id}}} # ` + long + `","variables":{"representations":[{"__typename":"P","id":"1"}]}}`))
	if !ok {
		t.Fatal("not an _entities query")
	}
	b, _ := r.EntityBody(0)
	if rep := len(r.Reps[0]); len(b) > rep+64 {
		t.Errorf("the key body of a %d-byte representation of a %d-byte query is %d bytes", rep, len(long), len(b))
	}
}

// TestEntityRequestOddMembers: a body with a member the entities' keys
// would not hold, one in another case or with an escape, or one repeated,
// is not taken apart (it is cached whole): a server that decodes it as
// encoding/json does could run another request than the one keyed.
func TestEntityRequestOddMembers(t *testing.T) {
	q := `"query":"query($representations:[_Any!]!){_entities(representations:$representations){...on P{id}}}"`
	reps := `"representations":[{"__typename":"P","id":"1"}]`
	if _, ok := ParseEntityRequest([]byte(`{` + q + `,"variables":{` + reps + `}}`)); !ok {
		t.Fatal("the plain body is not taken apart: the cases below prove nothing")
	}
	for _, body := range []string{
		`{` + q + `,"QUERY":"{ other }","variables":{` + reps + `}}`,
		`{` + q + `,"qu\u0065ry":"{ other }","variables":{` + reps + `}}`,
		`{` + q + `,` + q + `,"variables":{` + reps + `}}`,
		`{` + q + `,"variables":{` + reps + `},"variables":{` + reps + `}}`,
		`{` + q + `,"doc_id":"x","variables":{` + reps + `}}`,
		`{` + q + `,"variables":{` + reps + `,` + reps + `}}`,
		`{` + q + `,"variables":{` + reps + `,"repr\u0065sentations":[{"__typename":"P","id":"2"}]}}`,
	} {
		if _, ok := ParseEntityRequest([]byte(body)); ok {
			t.Errorf("%s taken apart", body)
		}
	}
}

// TestNotEntitiesCostsNothing: a body that names _entities and
// representations in its query text but has no representations variable
// (a gateway that batches aliased _entities fields, each with a variable
// of its own, as fusion-transport's does) is told apart without copying
// its variables: no allocation, whatever their size. An _entities query
// costs its request and its key's digest input.
func TestNotEntitiesCostsNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates")
	}
	big := strings.Repeat(`{"__typename":"Product","upc":"1"},`, 200) + `{"__typename":"Product","upc":"2"}`
	aliased := []byte(`{"query":"query($p0:[_Any!]!,$p1:[_Any!]!){p0:_entities(representations:$p0){...on Product{name}} p1:_entities(representations:$p1){...on Product{name}}}","variables":{"p0":[` + big + `],"p1":[` + big + `]}}`)
	if _, ok := ParseValidEntityRequest(aliased); ok {
		t.Fatal("an aliased batch taken for an _entities query")
	}
	if n := testing.AllocsPerRun(100, func() { ParseValidEntityRequest(aliased) }); n != 0 {
		t.Errorf("ParseValidEntityRequest of an aliased batch: %.0f allocations, want 0", n)
	}
	one := []byte(`{"query":"query($representations:[_Any!]!){_entities(representations:$representations){...on Product{name}}}","variables":{"representations":[{"__typename":"Product","upc":"1"},{"__typename":"Product","upc":"2"}],"x":1}}`)
	if n := testing.AllocsPerRun(100, func() { ParseValidEntityRequest(one) }); n > 2 {
		t.Errorf("ParseValidEntityRequest of an _entities query: %.0f allocations, want at most 2", n)
	}
}
