package respcache

import (
	"encoding/json"
	"testing"
)

// TestCanonical: a representation is used as written only if it is what
// json.Marshal writes for the value it decodes to; then its key body
// equals the one of the slow path.
func TestCanonical(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want bool
	}{
		{`{"__typename":"Product","upc":"1"}`, true},
		{`{"upc":"1","__typename":"Product"}`, false},
		{`{"__typename": "Product","upc":"1"}`, false},
		{`{"a":{"b":1,"c":[1,2]},"d":null}`, true},
		{`{"a":{"c":1,"b":2}}`, false},
		{`{"a":[ 1]}`, false},
		{`{"a":"x\"y"}`, false},
		{`{"a":"<b>"}`, false},
		{`{"a\u0062":1}`, false},
		{`{"a":1,"a":2}`, false},
		{`"s"`, true},
		{`12.50`, true},
	} {
		if got := canonical([]byte(tc.v)); got != tc.want {
			t.Errorf("canonical(%s) = %t, want %t", tc.v, got, tc.want)
		}
		if tc.want {
			var v any
			json.Unmarshal([]byte(tc.v), &v)
			if b, _ := json.Marshal(v); string(b) != tc.v && tc.v != `12.50` {
				t.Errorf("%s is called canonical, but Marshal writes %s", tc.v, b)
			}
		}
	}
}

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
