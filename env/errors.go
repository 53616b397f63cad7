package env

import (
	"fmt"
	"strings"
)

// KeyError reports a bad configuration value: the key path (such as
// source_schemas.products.conn_lifetime, or an environment variable's name),
// the value, and what is wrong with it.
type KeyError struct {
	// Key is the dotted key path or the environment variable.
	Key string
	// Value is the offending value as read, nil when the key is missing.
	Value any
	// Reason says what is wrong, for example `invalid duration "2x"`.
	Reason string
	// Err is the underlying cause, if any.
	Err error
}

func (e *KeyError) Error() string {
	return e.Key + ": " + e.Reason
}

// Unwrap returns the underlying cause.
func (e *KeyError) Unwrap() error { return e.Err }

// errorList collects KeyErrors so that one Load reports every problem.
type errorList []error

func (l *errorList) add(key string, value any, err error, format string, args ...any) {
	*l = append(*l, &KeyError{Key: key, Value: value, Reason: fmt.Sprintf(format, args...), Err: err})
}

// addAll appends the errors in err, flattening a joined list. A KeyError for
// a key already reported is dropped: a value that failed to decode is left
// zero, and Validate would report that zero again (a url that is not a string
// is also a missing url).
func (l *errorList) addAll(err error) {
	list, ok := err.(joined)
	if !ok && err != nil {
		list = joined{err}
	}
	for _, e := range list {
		if ke, ok := e.(*KeyError); ok && l.has(ke.Key) {
			continue
		}
		*l = append(*l, e)
	}
}

func (l errorList) has(key string) bool {
	for _, e := range l {
		if ke, ok := e.(*KeyError); ok && ke.Key == key {
			return true
		}
	}
	return false
}

// err returns nil, the single error, or all of them joined one per line.
func (l errorList) err() error {
	switch len(l) {
	case 0:
		return nil
	case 1:
		return l[0]
	}
	return joined(l)
}

type joined []error

func (j joined) Error() string {
	var b strings.Builder
	for i, e := range j {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

func (j joined) Unwrap() []error { return j }
