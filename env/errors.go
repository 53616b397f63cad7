package env

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fusiongo/transport/internal/redact"
)

// KeyError reports a bad configuration value: the key path (such as
// source_schemas.products.conn_lifetime, or an environment variable's name),
// the value, and what is wrong with it.
type KeyError struct {
	// Key is the dotted key path or the environment variable.
	Key string
	// Value is the offending value as read, nil when the key is missing,
	// with its secrets hidden as in Reason: a URL's password as xxxxx, a
	// headers.set value or the invalidation token as [redacted]
	// (docs/configuration.md, "Secrets").
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

// add appends a KeyError. Its Value is shown(key, value): an error is
// printed and logged, so it must hold no secret; a Reason that shows the
// value must show it through shown or redact as well.
func (l *errorList) add(key string, value any, err error, format string, args ...any) {
	*l = append(*l, &KeyError{Key: key, Value: shown(key, value), Reason: fmt.Sprintf(format, args...), Err: err})
}

// secretKey reports whether the value of key, a dotted key path or a
// variable's name, is a secret in itself: headers.set, a headers section
// (which holds it), and what a typo of either makes (headers.sett,
// header.set, FUSION_DEFAULTS__HEADERS__SETS), since their values were meant
// as the same secrets; and every key of the top-level response_cache block,
// whose one key is the invalidation token, typos and FUSION_RESPONSE_CACHE__*
// variables included, and any key whose name holds "token" (the token under
// a misspelt block, response_cach.invalidation_token): no key that is not a
// secret has it in its name. (redis.url's password is hidden as every URL's
// is, by shown.)
func secretKey(key string) bool {
	k := strings.ToLower(key)
	if strings.HasPrefix(k, strings.ToLower(envPrefix)) {
		k = strings.ReplaceAll(k, "__", ".")
	}
	return strings.Contains(k, "headers.set") || strings.Contains(k, "header.set") || k == "headers" || strings.HasSuffix(k, ".headers") ||
		k == "response_cache" || strings.HasPrefix(k, "response_cache.") || strings.HasPrefix(k, "fusion_response_cache.") ||
		strings.Contains(k, "token")
}

// shown returns v, the value of key, as an error may show it: redact.Value
// for a secret key (secretKey), and otherwise v with every URL in it, however
// deep in lists and mappings, with its password hidden (redact.URL). A value
// without secrets is returned as it is.
func shown(key string, v any) any {
	if v == nil {
		return nil
	}
	if secretKey(key) {
		return redact.Value
	}
	switch x := v.(type) {
	case string:
		return redact.URL(x)
	case []any:
		out := make([]any, len(x))
		for i, item := range x {
			out[i] = shown(fmt.Sprintf("%s[%d]", key, i), item)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, item := range x {
			out[k] = shown(key+"."+k, item)
		}
		return out
	}
	return v
}

// shownQuoted is shown for a string, quoted as %q would quote it, except
// redact.Value for a secret key: a placeholder in quotes would read as the
// value itself.
func shownQuoted(key, v string) string {
	if secretKey(key) {
		return redact.Value
	}
	return strconv.Quote(redact.URL(v))
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
