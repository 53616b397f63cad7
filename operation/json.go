package operation

import (
	"bytes"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// role is what a member of a request object is to a server.
type role int

const (
	roleOther role = iota // variables, extensions, anything else
	roleQuery             // read as "query", the document
	roleName              // read as "operationName"
)

// memberRole tells whether key, a quoted member name, is read as "query"
// or "operationName" by a decoder that matches names without case (see
// foldMatch), and whether it is that name exactly once unescaped
// ("\u0071uery" is "query").
func memberRole(key []byte) (r role, exact bool) {
	name := key[1 : len(key)-1]
	if bytes.IndexByte(name, '\\') >= 0 {
		var buf [32]byte
		name = unquote(buf[:0], key)
	}
	switch {
	case foldMatch(name, "query"):
		return roleQuery, string(name) == "query"
	case foldMatch(name, "operationName"):
		return roleName, string(name) == "operationName"
	}
	return roleOther, false
}

// foldMatch reports whether name, an unescaped member name, matches target,
// ASCII letters, as encoding/json/v2's case-insensitive matching does: '_'
// and '-' left out, and the rest compared under simple Unicode case folding
// (so "\u212A", the Kelvin sign, is a 'k'). Every name that encoding/json
// (v1) matches to target, bytes.EqualFold, matches here too.
func foldMatch(name []byte, target string) bool {
	j := 0
	for i := 0; i < len(name); {
		c := name[i]
		if c < utf8.RuneSelf {
			i++
			if c == '_' || c == '-' {
				continue
			}
			// For a letter of target, c|0x20 is it only if c is it in
			// either case.
			if j == len(target) || c|0x20 != target[j]|0x20 {
				return false
			}
			j++
			continue
		}
		r, n := utf8.DecodeRune(name[i:])
		i += n
		if j == len(target) || foldRune(r) != rune(target[j]&^0x20) {
			return false
		}
		j++
	}
	return j == len(target)
}

// foldRune returns the smallest rune of r's simple case folding orbit, as
// encoding/json's does: for an ASCII letter, its upper case.
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}

// unquote returns the content of s, a valid JSON string with its quotes.
// Without escapes it is a part of s; otherwise it is unescaped into dst,
// as encoding/json does (a lone surrogate becomes U+FFFD), except that
// bytes that are not UTF-8 are kept as they are: what matters here is
// ASCII, and they are not.
func unquote(dst, s []byte) []byte {
	s = s[1 : len(s)-1]
	i := bytes.IndexByte(s, '\\')
	if i < 0 {
		return s
	}
	for {
		dst = append(dst, s[:i]...)
		s = s[i:]
		if len(s) == 0 {
			return dst
		}
		// s[0] is a backslash.
		switch c := s[1]; c {
		case 'b':
			dst, s = append(dst, '\b'), s[2:]
		case 'f':
			dst, s = append(dst, '\f'), s[2:]
		case 'n':
			dst, s = append(dst, '\n'), s[2:]
		case 'r':
			dst, s = append(dst, '\r'), s[2:]
		case 't':
			dst, s = append(dst, '\t'), s[2:]
		case 'u':
			r := hex4(s[2:6])
			s = s[6:]
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if len(s) >= 6 && s[0] == '\\' && s[1] == 'u' {
					r2 = hex4(s[2:6])
				}
				if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
					r, s = dec, s[6:]
				} else {
					r = unicode.ReplacementChar
				}
			}
			dst = utf8.AppendRune(dst, r)
		default: // '"', '\\', '/'
			dst, s = append(dst, c), s[2:]
		}
		if i = bytes.IndexByte(s, '\\'); i < 0 {
			i = len(s)
		}
	}
}

// hex4 reads the four hex digits of a \u escape.
func hex4(h []byte) rune {
	var r rune
	for _, c := range h[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c <= 'F':
			c -= 'A' - 10
		default:
			c -= 'a' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
