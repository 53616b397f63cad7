package respcache

import (
	"bytes"
	"encoding/json"
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

// EntityRequest is an _entities query's body taken apart. Immutable once
// parsed.
type EntityRequest struct {
	top  map[string]json.RawMessage // the body's members, as sent
	vars map[string]json.RawMessage // its variables, as sent
	// Reps are variables.representations, each as sent.
	Reps []json.RawMessage
	// base is what every entity's key holds besides its representation:
	// the query, the operation name and the other variables.
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
	if !bytes.Contains(body, entitiesField) || !bytes.Contains(body, repsField) {
		return nil, false
	}
	r = &EntityRequest{}
	if json.Unmarshal(body, &r.top) != nil {
		return nil, false
	}
	var query string
	if json.Unmarshal(r.top["query"], &query) != nil || !bytes.Contains([]byte(query), entitiesField) {
		return nil, false
	}
	if json.Unmarshal(r.top["variables"], &r.vars) != nil {
		return nil, false
	}
	if json.Unmarshal(r.vars["representations"], &r.Reps) != nil || len(r.Reps) == 0 {
		return nil, false
	}
	others := make(map[string]json.RawMessage, len(r.vars))
	for k, v := range r.vars {
		if k != "representations" {
			others[k] = v
		}
	}
	base, err := json.Marshal(struct {
		Query         string                     `json:"query"`
		OperationName json.RawMessage            `json:"operationName,omitempty"`
		Variables     map[string]json.RawMessage `json:"variables"`
		Extensions    json.RawMessage            `json:"extensions,omitempty"`
	}{query, r.top["operationName"], others, r.top["extensions"]})
	if err != nil {
		return nil, false
	}
	r.base = base
	return r, true
}

// entityMark starts the key body of an entity: no request body starts so
// (it is not JSON), so an entity's key never meets a whole answer's.
const entityMark = "\x00entity\x00"

// EntityBody returns the body that representation i's key is taken over,
// in place of the request's body: the query, operation name and other
// variables, and the representation with its members in sorted order (the
// order of a representation's members is not significant). ok is false if
// the representation is not JSON.
func (r *EntityRequest) EntityBody(i int) (body []byte, ok bool) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(r.Reps[i]))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return nil, false
	}
	canon, err := json.Marshal(v) // maps marshal with sorted keys
	if err != nil {
		return nil, false
	}
	b := make([]byte, 0, len(entityMark)+len(r.base)+1+len(canon))
	b = append(b, entityMark...)
	b = append(b, r.base...)
	b = append(b, 0)
	return append(b, canon...), true
}

// Only returns the body of the request with only the representations at
// idx, in that order; the query text and the other members are unchanged
// (a body's members come out in sorted order).
func (r *EntityRequest) Only(idx []int) ([]byte, error) {
	reps := make([]json.RawMessage, len(idx))
	for j, i := range idx {
		reps[j] = r.Reps[i]
	}
	list, err := json.Marshal(reps)
	if err != nil {
		return nil, err
	}
	vars := make(map[string]json.RawMessage, len(r.vars))
	for k, v := range r.vars {
		vars[k] = v
	}
	vars["representations"] = list
	vb, err := json.Marshal(vars)
	if err != nil {
		return nil, err
	}
	top := make(map[string]json.RawMessage, len(r.top))
	for k, v := range r.top {
		top[k] = v
	}
	top["variables"] = vb
	return json.Marshal(top)
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
