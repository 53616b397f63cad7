package schemas

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// federationSDL declares what every executable schema needs for Apollo
// Federation (v1): the scalars and directives the type definitions use and
// the _Service type behind _service { sdl }. graphql-go rejects undeclared
// directives, so they are declared here even though they change nothing at
// run time.
const federationSDL = `
scalar _Any
scalar _FieldSet
directive @key(fields: _FieldSet!) on OBJECT | INTERFACE
directive @external on FIELD_DEFINITION
directive @requires(fields: _FieldSet!) on FIELD_DEFINITION
directive @provides(fields: _FieldSet!) on FIELD_DEFINITION
directive @extends on OBJECT | INTERFACE
type _Service {
  sdl: String
}
`

// representation is the _Any scalar: one entity representation given to
// _entities, such as {"__typename":"Product","upc":"2","price":899}.
type representation struct {
	fields map[string]any
}

// ImplementsGraphQLType binds representation to the _Any scalar.
func (representation) ImplementsGraphQLType(name string) bool { return name == "_Any" }

// UnmarshalGraphQL accepts a JSON object, from a variable or an inline object
// literal.
func (r *representation) UnmarshalGraphQL(input any) error {
	m, ok := input.(map[string]any)
	if !ok {
		return fmt.Errorf("_Any: a representation must be an object, got %T", input)
	}
	r.fields = m
	return nil
}

// typename is the representation's __typename, or "" if it has none.
func (r representation) typename() string {
	s, _ := r.fields["__typename"].(string)
	return s
}

// key returns the representation's field as an ID-like string: strings as
// they are, integral numbers in decimal. ok is false for anything else.
func (r representation) key(field string) (string, bool) {
	switch v := r.fields[field].(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	default:
		if n, ok := r.integer(field); ok {
			return strconv.FormatInt(int64(n), 10), true
		}
		return "", false
	}
}

// integer returns the representation's field as an Int (32-bit), whatever
// numeric type the decoder chose for it.
func (r representation) integer(field string) (int32, bool) {
	var f float64
	switch v := r.fields[field].(type) {
	case int32:
		return v, true
	case int:
		f = float64(v)
	case int64:
		f = float64(v)
	case float64:
		f = v
	case json.Number:
		n, err := v.Float64()
		if err != nil {
			return 0, false
		}
		f = n
	default:
		return 0, false
	}
	if f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32 {
		return 0, false
	}
	return int32(f), true
}

// entitiesArgs are the arguments of _entities.
type entitiesArgs struct {
	Representations []representation
}

// service resolves _Service.
type service struct{ sdl string }

func (s service) Sdl() *string { return &s.sdl }

func strPtr(s string) *string { return &s }

func int32Ptr(i int32) *int32 { return &i }
