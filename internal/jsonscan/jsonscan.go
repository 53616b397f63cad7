// Package jsonscan walks JSON that json.Valid has accepted: it finds where
// values begin and end without checking them again, so that a request's
// variables cost one validating pass and one fast skip. Package operation
// reads a request's members with it to classify the request, and package
// middleware to rewrite one (automatic persisted queries) without decoding
// and encoding its variables again.
//
// Every function assumes valid JSON: on anything else its result is
// meaningless (but it never reads out of bounds of what it is given).
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
	return i
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
func Members(data []byte, f func(key, value []byte) bool) bool {
	i := SkipSpace(data, 0)
	if i == len(data) || data[i] != '{' {
		return false
	}
	if i = SkipSpace(data, i+1); data[i] == '}' {
		return true
	}
	for {
		end := SkipString(data, i)
		key := data[i:end]
		i = SkipSpace(data, SkipSpace(data, end)+1) // past ':'
		end = SkipValue(data, i)
		if !f(key, data[i:end]) {
			return false
		}
		if i = SkipSpace(data, end); data[i] == '}' {
			return true
		}
		i = SkipSpace(data, i+1) // past ','
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
