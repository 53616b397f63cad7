// Package jsonscan walks JSON that json.Valid has accepted: it finds where
// values begin and end without checking them again, so that a request's
// variables cost one validating pass and one fast skip. Package operation
// reads a request's members with it to classify the request, and package
// middleware to rewrite one (automatic persisted queries) without decoding
// and encoding its variables again.
//
// Every function but Members assumes valid JSON: on anything else its
// result is meaningless, but no function reads out of bounds of what it is
// given. Members checks the frame of the object it walks, so that a
// caller may walk a body no one validated (see its documentation).
// It imports only the standard library, and nothing of this module.
package jsonscan

// SkipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func SkipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// SkipString returns the index just past the JSON string that starts at
// data[i].
func SkipString(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(data) // unterminated, maybe by a last backslash
}

// SkipValue returns the index just past the JSON value that starts at
// data[i].
func SkipValue(data []byte, i int) int {
	switch data[i] {
	case '"':
		return SkipString(data, i)
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				i = SkipString(data, i)
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

// Members calls f with the key (quoted, as in data) and value of each
// member of the object that data holds, until f returns false. It reports
// whether data is an object and f never returned false. key and value are
// parts of data: Offset tells where they start.
//
// On data that is not valid JSON it reads no byte out of bounds: it
// returns false where the object's frame breaks (a key that is no string,
// no ':' after it, no value, neither ',' nor '}' after one), having
// called f for the members before; what it hands f inside a value may
// then be anything.
func Members(data []byte, f func(key, value []byte) bool) bool {
	i := SkipSpace(data, 0)
	if i == len(data) || data[i] != '{' {
		return false
	}
	if i = SkipSpace(data, i+1); i < len(data) && data[i] == '}' {
		return true
	}
	for {
		if i == len(data) || data[i] != '"' {
			return false
		}
		end := SkipString(data, i)
		key := data[i:end]
		if i = SkipSpace(data, end); i == len(data) || data[i] != ':' {
			return false
		}
		i = SkipSpace(data, i+1)
		if i == len(data) {
			return false
		}
		if end = SkipValue(data, i); end == i || !f(key, data[i:end]) {
			return false
		}
		if i = SkipSpace(data, end); i == len(data) {
			return false
		}
		switch data[i] {
		case '}':
			return true
		case ',':
			i = SkipSpace(data, i+1)
		default:
			return false
		}
	}
}

// Elements calls f with each element of the array that data holds, until
// f returns false. It reports whether data is an array and f never
// returned false.
func Elements(data []byte, f func(elem []byte) bool) bool {
	i := SkipSpace(data, 0)
	if i == len(data) || data[i] != '[' {
		return false
	}
	if i = SkipSpace(data, i+1); data[i] == ']' {
		return true
	}
	for {
		end := SkipValue(data, i)
		if !f(data[i:end]) {
			return false
		}
		if i = SkipSpace(data, end); data[i] == ']' {
			return true
		}
		i = SkipSpace(data, i+1) // past ','
	}
}

// Offset returns where part, a slice of data (as Members hands out),
// starts in data. Slices of one array share its end, so the difference of
// their capacities is the offset.
func Offset(data, part []byte) int {
	return cap(data) - cap(part)
}
