package jsonscan_test

import (
	"testing"

	"github.com/fusiongo/transport/internal/jsonscan"
)

// TestMembersOffsets: Members hands out each member's key and value as
// parts of the object, and Offset finds where they start in it.
func TestMembersOffsets(t *testing.T) {
	data := []byte(` { "query" : "{ a(s: \"}\") }", "variables":{"x":[1,{"y":"]"}]} ,"n":null, "b": true}`)
	type member struct {
		key, value string
		at         int
	}
	var got []member
	ok := jsonscan.Members(data, func(key, value []byte) bool {
		got = append(got, member{string(key), string(value), jsonscan.Offset(data, key)})
		return true
	})
	want := []member{
		{`"query"`, `"{ a(s: \"}\") }"`, 3},
		{`"variables"`, `{"x":[1,{"y":"]"}]}`, 32},
		{`"n"`, `null`, 65},
		{`"b"`, `true`, 75},
	}
	if !ok || len(got) != len(want) {
		t.Fatalf("Members = %v, %+v; want true, %+v", ok, got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("member %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if jsonscan.Members([]byte(`[1]`), func(_, _ []byte) bool { return true }) {
		t.Error("Members of an array reported an object")
	}
	n := 0
	if !jsonscan.Elements([]byte(`[1, "a,]", {"b":[2]}]`), func([]byte) bool { n++; return true }) || n != 3 {
		t.Errorf("Elements counted %d elements, want 3", n)
	}
}

// TestMembersInvalid: on what is not valid JSON, Members stops where the
// object's frame breaks, reading nothing out of bounds.
func TestMembersInvalid(t *testing.T) {
	for _, data := range []string{
		``, `{`, `{"a"`, `{"a":`, `{"a":1`, `{"a":1,`, `{"a" 1}`, `{a:1}`, `{"a":1 "b":2}`, `{"a":}`,
		`{"a":"x`, `{"a":{"b":1}`, `{"a":[1,2}`, `{"a`, "{\"a\":\"\\",
	} {
		n := 0
		if jsonscan.Members([]byte(data), func(_, _ []byte) bool { n++; return true }) {
			t.Errorf("Members(%q) = true after %d members, want false", data, n)
		}
	}
}
