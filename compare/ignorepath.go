package compare

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// segment is one step of an ignore path: a member name or array index, or
// any member or index.
type segment struct {
	name string // a member, or an index in decimal
	any  bool
}

func (s segment) matches(key string) bool { return s.any || s.name == key }

// parsePath parses an ignore path (see Rules.IgnorePaths). A leading "$" or
// "$." names the root, as in the paths an answer.Difference carries.
func parsePath(p string) ([]segment, error) {
	s := p
	if rest, ok := strings.CutPrefix(s, "$"); ok {
		s = strings.TrimPrefix(rest, ".")
	}
	if s == "" {
		return nil, errors.New("empty: name at least one member")
	}
	var segs []segment
	for first := true; s != ""; first = false {
		switch {
		case s[0] == '[':
			seg, rest, err := parseBracket(s)
			if err != nil {
				return nil, err
			}
			segs, s = append(segs, seg), rest
		case s[0] == '.' && !first:
			s = s[1:]
			if s == "" || s[0] == '.' || s[0] == '[' {
				return nil, errors.New("empty member after a dot")
			}
			fallthrough
		default:
			if s[0] == '.' {
				return nil, errors.New("starts with a dot")
			}
			end := strings.IndexAny(s, ".[]")
			if end < 0 {
				end = len(s)
			}
			if end == 0 {
				return nil, fmt.Errorf("unexpected %q", s[0])
			}
			name := s[:end]
			segs, s = append(segs, segment{name: name, any: name == "*"}), s[end:]
		}
		if s != "" && s[0] != '.' && s[0] != '[' {
			return nil, fmt.Errorf("unexpected %q after %q", s[0], p[:len(p)-len(s)])
		}
	}
	return segs, nil
}

// parseBracket parses a bracketed step at the start of s: [0], [*] or
// ["member"].
func parseBracket(s string) (segment, string, error) {
	if strings.HasPrefix(s, `["`) {
		q, err := strconv.QuotedPrefix(s[1:])
		if err != nil {
			return segment{}, "", errors.New(`unterminated quoted member`)
		}
		rest, ok := strings.CutPrefix(s[1+len(q):], "]")
		if !ok {
			return segment{}, "", fmt.Errorf("missing ] after %s", q)
		}
		name, _ := strconv.Unquote(q) // QuotedPrefix checked it
		return segment{name: name}, rest, nil
	}
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return segment{}, "", errors.New("missing ]")
	}
	inner := s[1:end]
	if inner == "*" {
		return segment{any: true}, s[end+1:], nil
	}
	if n, err := strconv.Atoi(inner); err != nil || n < 0 || strconv.Itoa(n) != inner {
		return segment{}, "", fmt.Errorf("[%s]: want an index, * or a quoted member", inner)
	}
	return segment{name: inner}, s[end+1:], nil
}

// prune removes from v, in place, what the patterns name (see
// Rules.IgnorePaths) and returns what is left. emptied reports that v was a
// non-empty object or array that pruning left empty, which its parent then
// drops too. The values are the comparer's own decoding, so changing them
// changes nobody else's.
func prune(v any, patterns [][]segment) (left any, emptied bool) {
	if len(patterns) == 0 {
		return v, false
	}
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 0 {
			return v, false
		}
		for key, child := range v {
			drop, rest := step(patterns, key)
			if !drop && len(rest) > 0 {
				var empty bool
				v[key], empty = prune(child, rest)
				drop = empty
			}
			if drop {
				delete(v, key)
			}
		}
		return v, len(v) == 0
	case []any:
		if len(v) == 0 {
			return v, false
		}
		kept := v[:0]
		for i, child := range v {
			drop, rest := step(patterns, strconv.Itoa(i))
			if !drop && len(rest) > 0 {
				var empty bool
				child, empty = prune(child, rest)
				drop = empty
			}
			if !drop {
				kept = append(kept, child)
			}
		}
		return kept, len(kept) == 0
	}
	return v, false
}

// step advances the patterns over one member or index: drop reports that
// a pattern ends there, rest holds the remainders of those that go on.
func step(patterns [][]segment, key string) (drop bool, rest [][]segment) {
	for _, p := range patterns {
		if !p[0].matches(key) {
			continue
		}
		if len(p) == 1 {
			return true, nil
		}
		rest = append(rest, p[1:])
	}
	return false, rest
}
