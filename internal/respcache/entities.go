package respcache

import (
	"bytes"
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
	Reps []json.RawMessage
	// base is what every entity's key holds besides its representation:
	// the query, the operation name, the other variables and the
	// extensions, as sent.
	base []byte
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
	var query, opName, vars, ext []byte
	if !jsonscan.Members(body, func(key, value []byte) bool {
		switch string(key) {
		case `"query"`:
			query = value
		case `"operationName"`:
			opName = value
		case `"variables"`:
			vars = value
		case `"extensions"`:
			ext = value
		}
		return true
	}) || len(query) == 0 || query[0] != '"' || !bytes.Contains(query, entitiesField) {
		return nil, false
	}
	r = &EntityRequest{body: body}
	base := make([]byte, 0, len(query)+len(opName)+len(ext)+64)
	base = append(base, query...)
	base = append(base, 0)
	base = append(base, opName...)
	base = append(base, 0)
	base = append(base, ext...)
	if !jsonscan.Members(vars, func(key, value []byte) bool {
		if string(key) == `"representations"` {
			r.reps = value
			return true
		}
		// The other variables, in their order: two calls that write them
		// in another order do not share (a miss, never a wrong answer).
		base = append(base, 0)
		base = append(base, key...)
		base = append(base, ':')
		base = append(base, value...)
		return true
	}) || r.reps == nil {
		return nil, false
	}
	if !jsonscan.Elements(r.reps, func(elem []byte) bool {
		r.Reps = append(r.Reps, elem)
		return true
	}) || len(r.Reps) == 0 {
		return nil, false
	}
	r.base = base
	return r, true
}

// entityMark starts the key body of an entity: no request body starts so
// (it is not JSON), so an entity's key never meets a whole answer's.
const entityMark = "\x00entity\x00"

// EntityBody returns the body that representation i's key is taken over,
// in place of the request's body: the query, operation name, other
// variables and extensions, and the representation in canonical form: its
// members sorted, no white space (the order of a representation's members
// is not significant). A representation already so written (as gateways
// write them) is used as it is; another is decoded and encoded again. ok
// is false if the representation is not JSON.
func (r *EntityRequest) EntityBody(i int) (body []byte, ok bool) {
	rep := []byte(r.Reps[i])
	if !canonical(rep) {
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
		rep = canon
	}
	b := make([]byte, 0, len(entityMark)+len(r.base)+1+len(rep))
	b = append(b, entityMark...)
	b = append(b, r.base...)
	b = append(b, 0)
	return append(b, rep...), true
}

// canonical reports whether v, valid JSON, is written as json.Marshal
// writes the value it decodes to: no white space, every object's members
// in sorted order of their names (names without escapes, compared as
// bytes), no escape in a string that Marshal would not write. A false
// answer only costs the slower path.
func canonical(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	switch v[0] {
	case '{':
		var last []byte
		ok := jsonscan.Members(v, func(key, value []byte) bool {
			if bytes.IndexByte(key, '\\') >= 0 || (last != nil && bytes.Compare(last, key) >= 0) || !canonical(value) {
				return false
			}
			last = key
			return true
		})
		return ok && noSpace(v)
	case '[':
		return jsonscan.Elements(v, canonical) && noSpace(v)
	case '"':
		return bytes.IndexByte(v, '\\') < 0 && !bytes.ContainsAny(v, "<>&") // Marshal escapes these
	default:
		return true // numbers and literals: as written
	}
}

// noSpace reports whether v, valid JSON, has no white space outside its
// strings.
func noSpace(v []byte) bool {
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case ' ', '\t', '\r', '\n':
			return false
		case '"':
			i = jsonscan.SkipString(v, i) - 1
		}
	}
	return true
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
	b := make([]byte, 0, size)
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
