package operation

import (
	"bytes"
	"encoding/json"
)

// The functions here walk JSON that json.Valid has accepted: they find where
// values begin and end without checking them again, so that a request's
// variables cost one validating pass and one fast skip.

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the JSON string that starts at
// data[i].
func skipString(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// skipValue returns the index just past the JSON value that starts at
// data[i].
func skipValue(data []byte, i int) int {
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				i = skipString(data, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(data) { // number, true, false, null
		switch data[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
		i++
	}
	return i
}

// members calls f with the key (quoted, as in data) and value of each member
// of the object that data holds, until f returns false. It reports whether
// data is an object and f never returned false.
func members(data []byte, f func(key, value []byte) bool) bool {
	i := skipSpace(data, 0)
	if i == len(data) || data[i] != '{' {
		return false
	}
	if i = skipSpace(data, i+1); data[i] == '}' {
		return true
	}
	for {
		end := skipString(data, i)
		key := data[i:end]
		i = skipSpace(data, skipSpace(data, end)+1) // past ':'
		end = skipValue(data, i)
		if !f(key, data[i:end]) {
			return false
		}
		if i = skipSpace(data, end); data[i] == '}' {
			return true
		}
		i = skipSpace(data, i+1) // past ','
	}
}

// elements calls f with each element of the array that data holds, until f
// returns false. It reports whether data is an array and f never returned
// false.
func elements(data []byte, f func(elem []byte) bool) bool {
	i := skipSpace(data, 0)
	if i == len(data) || data[i] != '[' {
		return false
	}
	if i = skipSpace(data, i+1); data[i] == ']' {
		return true
	}
	for {
		end := skipValue(data, i)
		if !f(data[i:end]) {
			return false
		}
		if i = skipSpace(data, end); data[i] == ']' {
			return true
		}
		i = skipSpace(data, i+1) // past ','
	}
}

// memberIs reports whether key, a quoted member name, is name once
// unescaped ("\u0071uery" is "query").
func memberIs(key []byte, name string) bool {
	if bytes.IndexByte(key, '\\') < 0 {
		return string(key[1:len(key)-1]) == name
	}
	var s string
	return json.Unmarshal(key, &s) == nil && s == name
}
