package respcache

import (
	"slices"
	"testing"
)

// TestInvalidationMessage: an invalidation message gives back its schema
// and tags, whatever they hold; a malformed one is refused.
func TestInvalidationMessage(t *testing.T) {
	for _, tc := range []struct {
		schema string
		tags   []string
	}{
		{"products", nil},
		{"products", []string{"a"}},
		{"a:b", []string{"x:y", "", "z\x01"}},
		{"", []string{"t"}},
		{"12:34", nil},
	} {
		schema, tags, ok := decodeInvalidation(encodeInvalidation(tc.schema, tc.tags))
		if !ok || schema != tc.schema || !slices.Equal(tags, tc.tags) {
			t.Errorf("%q %q came back as %q %q (ok %t)", tc.schema, tc.tags, schema, tags, ok)
		}
	}
	for _, bad := range []string{"", "x", "5:abc", "-1:", "3:abcx"} {
		if _, _, ok := decodeInvalidation(bad); ok {
			t.Errorf("%q decoded", bad)
		}
	}
}
