// Package redact hides the secrets a configuration holds wherever the
// transport shows a configured value: in errors, log lines and the
// fusion-transport config command. Three kinds of value are secret: the
// userinfo of a url or proxy URL, the query values of such a URL (an
// ?api_key= parameter), and the values of headers.set (an API key or a
// bearer token is what a static header is for).
package redact

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
)

// Value stands in for a secret value, such as a headers.set value, where
// the transport shows it; the header's name is shown as it is.
const Value = "[redacted]"

// hidden stands in for the userinfo of a URL that does not parse. It is
// what url.URL.Redacted writes for a password, so that every redacted URL
// looks alike.
const hidden = "xxxxx"

// URL returns raw with its secrets hidden: the password of its userinfo
// and the value of every query parameter (a schema URL such as
// ?api_key=... carries a key there; the names stay, so a reader sees which
// parameter it was). A URL that parses is shown as url.URL.Redacted shows
// it: the user name stays, the password becomes xxxxx, and each query value
// becomes xxxxx too. A URL that does not parse, or has no "//" before its
// host, has everything between "://" (or its start) and the last "@"
// hidden: without a parse, nothing tells where the user name ends or where
// the authority does (a password may hold '/', '?' or '#'), so the whole
// span goes; its query values after that are hidden as well. A URL with
// neither userinfo password nor query is returned as it was written.
func URL(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Opaque == "" {
		_, hasPassword := u.User.Password()
		if !hasPassword && u.RawQuery == "" {
			return raw // nothing to hide; shown as the user wrote it
		}
		v := *u
		if hasPassword {
			v.User = url.UserPassword(u.User.Username(), hidden)
		}
		v.RawQuery = hideQueryValues(u.RawQuery)
		return v.String()
	}
	s := hideUserinfo(raw)
	q := strings.IndexByte(s, '?')
	if q < 0 {
		return s
	}
	rest, frag := s[q+1:], ""
	if f := strings.IndexByte(rest, '#'); f >= 0 {
		rest, frag = rest[:f], rest[f:]
	}
	return s[:q+1] + hideQueryValues(rest) + frag
}

// hideQueryValues returns the raw query q with the value of each of its
// '&'-separated parameters replaced by xxxxx; a parameter without '='
// (a bare name, or a lone value) is hidden whole unless it is empty.
func hideQueryValues(q string) string {
	if q == "" {
		return q
	}
	parts := strings.Split(q, "&")
	for i, p := range parts {
		if p == "" {
			continue
		}
		if eq := strings.IndexByte(p, '='); eq >= 0 {
			parts[i] = p[:eq+1] + hidden
		} else {
			parts[i] = hidden
		}
	}
	return strings.Join(parts, "&")
}

// userinfoSpan returns the bounds of what hideUserinfo hides in raw:
// from after "://" (or the start) to the last "@"; ok is false when raw
// holds no "@" there.
func userinfoSpan(raw string) (start, end int, ok bool) {
	if i := strings.Index(raw, "://"); i >= 0 {
		start = i + len("://")
	}
	at := strings.LastIndex(raw[start:], "@")
	if at < 0 {
		return 0, 0, false
	}
	return start, start + at, true
}

func hideUserinfo(raw string) string {
	start, end, ok := userinfoSpan(raw)
	if !ok {
		return raw
	}
	return raw[:start] + hidden + raw[end:]
}

// Parse is url.Parse with its error redacted: the error is a *url.Error
// whose URL is URL(raw), and whose cause, when it quotes a piece of the
// userinfo (url.Parse says `invalid port ":s3cr" after host` of
// http://user:s3cr/et@host, and `invalid URL escape "%zz"` of a password
// holding %zz), quotes xxxxx instead. url.Parse's own error quotes raw as it
// is, and for a raw with '#' only the part before it, so redacting its
// text after the fact could miss the password.
func Parse(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err == nil {
		return u, nil
	}
	var ue *url.Error
	if !errors.As(err, &ue) {
		return nil, err
	}
	return nil, &url.Error{Op: ue.Op, URL: URL(raw), Err: redactCause(raw, ue.Err)}
}

// redactCause returns cause, or, if its text quotes a piece (two bytes or
// more) of raw's userinfo, an error with that text and each such piece
// quoted as xxxxx. The replacement does not wrap cause: its text is the
// secret.
func redactCause(raw string, cause error) error {
	start, end, ok := userinfoSpan(raw)
	if !ok || cause == nil {
		return cause
	}
	secret := raw[start:end]
	text := cause.Error()
	var b strings.Builder
	changed := false
	for i := 0; i < len(text); {
		if text[i] != '"' {
			b.WriteByte(text[i])
			i++
			continue
		}
		quoted, err := strconv.QuotedPrefix(text[i:])
		if err != nil {
			b.WriteString(text[i:])
			break
		}
		if piece, err := strconv.Unquote(quoted); err == nil && len(piece) >= 2 && strings.Contains(secret, piece) {
			b.WriteString(strconv.Quote(hidden))
			changed = true
		} else {
			b.WriteString(quoted)
		}
		i += len(quoted)
	}
	if !changed {
		return cause
	}
	return errors.New(b.String())
}

// Request returns u as every output of the request path shows it (errors,
// log lines, traces, the status page): scheme, host and path only. The
// userinfo goes (a password, and a user name that may be a key), and so do
// the query and the fragment: a GraphQL GET carries its document and
// variables in the query, user data that no log line should hold.
func Request(u *url.URL) string {
	if u == nil {
		return ""
	}
	v := *u
	v.User = nil
	v.RawQuery, v.ForceQuery, v.Fragment, v.RawFragment = "", false, "", ""
	return v.String()
}
