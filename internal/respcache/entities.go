package respcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"github.com/fusiongo/transport/internal/jsonscan"
	"maps"
	"slices"
	"strconv"
)

// A federation gateway's calls to a source schema are mostly _entities
// queries: one query text, a list of representations in
// variables.representations, the answer's entities in data._entities in
// the same order. The cache stores such an answer entity by entity, so
// that a call whose list overlaps an earlier one's sends only what it
// lacks. This file takes those requests and answers apart and puts them
// back together; the stage (package middleware) decides what to send.

// EntityRequest is an _entities query's body taken apart: slices of the
// body, which it does not copy. Immutable once parsed.
type EntityRequest struct {
	body []byte // the request's body
	reps []byte // variables.representations, the array as sent
	// Reps are its elements, each as sent.
	Reps     []json.RawMessage
	repsRoom [8]json.RawMessage // Reps' first backing array: a gateway's lists are mostly short
	// base is what every entity's key holds besides its representation:
	// a SHA-256 over the query, the operation name, the other variables
	// and the extensions, as sent, so that each representation's key
	// hashes the query text's 32 bytes and not the text again.
	base [sha256.Size]byte
}

var (
	entitiesField = []byte("_entities")
	repsField     = []byte("representations")
)

// ParseEntityRequest takes body apart if it is an _entities query: a JSON
// object whose query names _entities and whose variables hold a non-empty
// representations array. ok is false for any other body.
func ParseEntityRequest(body []byte) (r *EntityRequest, ok bool) {
	if !bytes.Contains(body, entitiesField) || !bytes.Contains(body, repsField) || !json.Valid(body) {
		return nil, false
	}
	return ParseValidEntityRequest(body)
}

// ParseValidEntityRequest is ParseEntityRequest for a body known to be
// valid JSON (a query that operation.Classify has read): it walks the body
// once more (internal/jsonscan) and decodes nothing.
func ParseValidEntityRequest(body []byte) (r *EntityRequest, ok bool) {
	if !bytes.Contains(body, entitiesField) || !bytes.Contains(body, repsField) {
		return nil, false
	}
	// Every member of the body must be one of these four, written as is
	// and once: the entities' keys hold them and nothing else of the body,
	// and a server that reads a member in another case, written with an
	// escape, or repeated (encoding/json does all three) must not run
	// another request than the one keyed. Any other body is cached whole.
	var query, opName, vars, ext []byte
	known := true
	take := func(dst *[]byte, value []byte) {
		if *dst != nil {
			known = false
		}
		*dst = value
	}
	if !jsonscan.Members(body, func(key, value []byte) bool {
		switch string(key) {
		case `"query"`:
			take(&query, value)
		case `"operationName"`:
			take(&opName, value)
		case `"variables"`:
			take(&vars, value)
		case `"extensions"`:
			take(&ext, value)
		default:
			known = false
		}
		return known
	}) || len(query) == 0 || query[0] != '"' || !bytes.Contains(query, entitiesField) {
		return nil, false
	}
	var room [8]member
	reps, others, ok := splitVariables(vars, room[:0])
	if !ok {
		return nil, false
	}
	r = &EntityRequest{body: body, reps: reps}
	r.Reps = r.repsRoom[:0]
	if !jsonscan.Elements(r.reps, func(elem []byte) bool {
		r.Reps = append(r.Reps, elem)
		return true
	}) || len(r.Reps) == 0 {
		return nil, false
	}
	r.base = entityBase(query, opName, ext, others)
	return r, true
}

// splitVariables takes an _entities query's variables apart: its
// representations array, and the other variables in their order (appended
// to others, slices of vars, not copies: a body without representations,
// such as a gateway's aliased _entities fields, each with a variable of
// its own, costs no copy). ok is false if vars has no representations, or
// has it twice, or has a name written with an escape.
func splitVariables(vars []byte, others []member) (reps []byte, _ []member, ok bool) {
	if !jsonscan.Members(vars, func(key, value []byte) bool {
		if bytes.IndexByte(key, '\\') >= 0 {
			return false // a name with an escape may be representations to the server
		}
		if string(key) == `"representations"` {
			if reps != nil {
				return false // twice: which one a server reads is its own choice
			}
			reps = value
			return true
		}
		others = append(others, member{key, value})
		return true
	}) || reps == nil {
		return nil, nil, false
	}
	return reps, others, true
}

// entityBase returns what every entity's key holds besides its
// representation: a SHA-256 over the query, the operation name, the
// extensions and the other variables, in their order, as sent (two calls
// that write them in another order do not share: a miss, never a wrong
// answer).
func entityBase(query, opName, ext []byte, others []member) [sha256.Size]byte {
	size := len(query) + len(opName) + len(ext) + 2
	for _, m := range others {
		size += 2 + len(m.key) + len(m.value)
	}
	base := make([]byte, 0, size)
	base = append(base, query...)
	base = append(base, 0)
	base = append(base, opName...)
	base = append(base, 0)
	base = append(base, ext...)
	for _, m := range others {
		base = append(base, 0)
		base = append(base, m.key...)
		base = append(base, ':')
		base = append(base, m.value...)
	}
	return sha256.Sum256(base)
}

// entityMark starts the key body of an entity: no request body starts so
// (it is not JSON), so an entity's key never meets a whole answer's.
const entityMark = "\x00entity\x00"

// EntityBody returns the body that representation i's key is taken over,
// in place of the request's body: a digest of the query, operation name,
// other variables and extensions, and the representation in canonical form
// (appendCanonical: its members in order at every depth, no white space;
// the order of a representation's members is not significant). A
// representation with a member name written with an escape, or twice, is
// decoded and encoded again (encoding/json: names unescaped, the last of
// twice kept). ok is false if the representation is not JSON.
func (r *EntityRequest) EntityBody(i int) (body []byte, ok bool) {
	return r.AppendEntityBody(make([]byte, 0, len(entityMark)+len(r.base)+1+len(r.Reps[i])), i)
}

// AppendEntityBody appends EntityBody(i) to b; ok is false, and what it
// appended meaningless, if the representation is not JSON.
func (r *EntityRequest) AppendEntityBody(b []byte, i int) (body []byte, ok bool) {
	rep := []byte(r.Reps[i])
	b = append(b, entityMark...)
	b = append(b, r.base[:]...)
	b = append(b, 0)
	if out, ok := appendCanonical(b, rep); ok {
		return out, true
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(rep))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return nil, false
	}
	canon, err := json.Marshal(v) // maps marshal with sorted keys
	if err != nil {
		return nil, false
	}
	return append(b, canon...), true
}

// member is one member of an object, as written.
type member struct{ key, value []byte }

// appendCanonical appends v, valid JSON, to dst in a canonical form: no
// white space outside strings, every object's members in the byte order
// of their names; strings, numbers and literals as written. Two values
// with one canonical form are one value to a JSON decoder (a value written
// otherwise, "\u0041" for "A" or 1.0 for 1, has another form: a miss,
// never a wrong answer). ok is false, and what it appended meaningless, if
// an object has a name written with an escape or a name twice, which a
// decoder reads otherwise than the bytes say.
func appendCanonical(dst, v []byte) ([]byte, bool) {
	switch v[0] {
	case '{':
		var room [8]member
		ms := room[:0]
		sorted := true
		if !jsonscan.Members(v, func(key, value []byte) bool {
			if bytes.IndexByte(key, '\\') >= 0 {
				return false
			}
			if len(ms) > 0 && bytes.Compare(ms[len(ms)-1].key, key) >= 0 {
				sorted = false
			}
			ms = append(ms, member{key, value})
			return true
		}) {
			return dst, false
		}
		if !sorted {
			slices.SortStableFunc(ms, func(a, b member) int { return bytes.Compare(a.key, b.key) })
			for k := 1; k < len(ms); k++ {
				if bytes.Equal(ms[k-1].key, ms[k].key) {
					return dst, false
				}
			}
		}
		dst = append(dst, '{')
		for k, m := range ms {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, m.key...)
			dst = append(dst, ':')
			var ok bool
			if dst, ok = appendCanonical(dst, m.value); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	case '[':
		dst = append(dst, '[')
		first, ok := true, true
		jsonscan.Elements(v, func(elem []byte) bool {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst, ok = appendCanonical(dst, elem)
			return ok
		})
		return append(dst, ']'), ok
	default:
		return append(dst, v...), true // a string, number or literal: as written
	}
}

// Only returns the body of the request with only the representations at
// idx, in that order: the body as sent, its representations array
// replaced.
func (r *EntityRequest) Only(idx []int) ([]byte, error) {
	at := jsonscan.Offset(r.body, r.reps)
	size := len(r.body) - len(r.reps) + 2
	for _, i := range idx {
		size += len(r.Reps[i]) + 1
	}
	b := make([]byte, 0, size)
	b = append(b, r.body[:at]...)
	b = append(b, '[')
	for j, i := range idx {
		if j > 0 {
			b = append(b, ',')
		}
		b = append(b, r.Reps[i]...)
	}
	b = append(b, ']')
	return append(b, r.body[at+len(r.reps):]...), nil
}

// EntityAnswer is an _entities answer taken apart. Immutable once parsed.
type EntityAnswer struct {
	// Entities are data._entities, each as the source schema wrote it.
	Entities []json.RawMessage
	// Failed holds the index of every entity that an error's path points
	// into (["_entities", i, ...]): never stored.
	Failed map[int]bool
	// Tags are extensions.apolloCacheTags, for every entity stored.
	Tags   []string
	errors []map[string]json.RawMessage // the errors, each as written
	rest   map[string]json.RawMessage   // the top-level members other than data and errors
}

// ParseEntityAnswer takes body apart if it is an answer to an _entities
// query for n representations: a JSON object whose data._entities is an
// array of n values. ok is false for anything else (an answer whose data
// is null, a list of another length).
func ParseEntityAnswer(body []byte, n int) (a *EntityAnswer, ok bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return nil, false
	}
	var data map[string]json.RawMessage
	if json.Unmarshal(top["data"], &data) != nil || len(data) != 1 {
		return nil, false
	}
	a = &EntityAnswer{Failed: map[int]bool{}}
	if json.Unmarshal(data["_entities"], &a.Entities) != nil || len(a.Entities) != n {
		return nil, false
	}
	if raw, ok := top["errors"]; ok && string(raw) != "null" {
		if json.Unmarshal(raw, &a.errors) != nil {
			return nil, false
		}
	}
	for _, e := range a.errors {
		if i, ok := entityIndex(e["path"]); ok && i < n {
			a.Failed[i] = true
		}
	}
	var ext struct {
		Tags []string `json:"apolloCacheTags"`
	}
	if raw, ok := top["extensions"]; ok {
		json.Unmarshal(raw, &ext) // tags that are not strings: none
		a.Tags = ext.Tags
	}
	a.rest = make(map[string]json.RawMessage, len(top))
	for k, v := range top {
		if k != "data" && k != "errors" {
			a.rest[k] = v
		}
	}
	return a, true
}

// entityIndex returns i of an error path ["_entities", i, ...].
func entityIndex(raw json.RawMessage) (int, bool) {
	var path []any
	if json.Unmarshal(raw, &path) != nil || len(path) < 2 || path[0] != "_entities" {
		return 0, false
	}
	f, ok := path[1].(float64)
	if !ok || f < 0 || f != float64(int(f)) {
		return 0, false
	}
	return int(f), true
}

// MergeEntities returns the caller's answer: entities, every one of the
// caller's list in its order, in data._entities; and, from fetched (the
// answer to the request for the representations at positions at of the
// caller's list; nil if none was sent), its errors, each whose path points
// into _entities renumbered to the caller's index, and its other members
// (extensions) as written. Members come in the order data, errors, then
// the others sorted: a source schema that writes data first writes the
// same bytes for the same entities.
func MergeEntities(entities []json.RawMessage, fetched *EntityAnswer, at []int) ([]byte, error) {
	size := 32
	for _, e := range entities {
		size += len(e) + 1
	}
	return AppendMergedEntities(make([]byte, 0, size), entities, fetched, at)
}

// AppendMergedEntities appends MergeEntities' answer to b.
func AppendMergedEntities(b []byte, entities []json.RawMessage, fetched *EntityAnswer, at []int) ([]byte, error) {
	b = append(b, `{"data":{"_entities":[`...)
	for i, e := range entities {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, e...)
	}
	b = append(b, "]}"...)
	if fetched != nil {
		if len(fetched.errors) > 0 {
			errs := make([]map[string]json.RawMessage, len(fetched.errors))
			for k, e := range fetched.errors {
				errs[k] = e
				if j, ok := entityIndex(e["path"]); ok && j < len(at) {
					errs[k] = renumbered(e, at[j])
				}
			}
			raw, err := json.Marshal(errs)
			if err != nil {
				return nil, err
			}
			b = append(b, `,"errors":`...)
			b = append(b, raw...)
		}
		for _, k := range slices.Sorted(maps.Keys(fetched.rest)) {
			name, _ := json.Marshal(k)
			b = append(b, ',')
			b = append(b, name...)
			b = append(b, ':')
			b = append(b, fetched.rest[k]...)
		}
	}
	return append(b, '}'), nil
}

// renumbered returns a copy of error e whose path's index is i.
func renumbered(e map[string]json.RawMessage, i int) map[string]json.RawMessage {
	var path []json.RawMessage
	json.Unmarshal(e["path"], &path) // entityIndex read it
	path[1] = json.RawMessage(strconv.Itoa(i))
	raw, _ := json.Marshal(path)
	out := make(map[string]json.RawMessage, len(e))
	for k, v := range e {
		out[k] = v
	}
	out["path"] = raw
	return out
}
