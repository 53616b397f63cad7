package answerdiff

import (
	"fmt"
	"net/url"

	"github.com/fusiongo/transport/answer"
)

// redirected reports whether a's answer came from somewhere other than
// where the request was sent.
func redirected(a *answer.Answer) bool {
	return len(a.Redirects) > 0 || (a.URL != "" && a.FinalURL != "" && a.URL != a.FinalURL)
}

// redirectDifference reports a redirect that only one side followed, or
// followed to a different place.
func (c *Comparer) redirectDifference(x, y *answer.Answer) (answer.Difference, bool) {
	xr, yr := redirected(x), redirected(y)
	endsDiffer := x.FinalURL != "" && y.FinalURL != "" && x.FinalURL != y.FinalURL
	if xr == yr && !endsDiffer {
		return answer.Difference{}, false
	}
	var expl string
	switch {
	case xr && !yr:
		expl = followed(c.a, x, y) + "; " + returned(c.b, y, x)
	case yr && !xr:
		expl = followed(c.b, y, x) + "; " + returned(c.a, x, y)
	case xr && yr:
		expl = followed(c.a, x, nil) + "; " + followed(c.b, y, nil)
	default:
		expl = fmt.Sprintf("%s answered from %s; %s answered from %s", c.a, x.FinalURL, c.b, y.FinalURL)
	}
	return answer.Difference{Kind: answer.KindRedirect, A: endURL(x), B: endURL(y), Explanation: expl}, true
}

func endURL(a *answer.Answer) string {
	if a.FinalURL != "" {
		return a.FinalURL
	}
	return a.URL
}

// followed phrases what the side f that was redirected did. other, if not
// nil, is the side that returned the redirect itself, whose status and
// Location stand in when the follower's sender kept no redirect chain.
func followed(name string, f, other *answer.Answer) string {
	switch len(f.Redirects) {
	case 0:
		if other != nil && isRedirect(other.Status) {
			return fmt.Sprintf("%s followed a %d to %s and got a %d", name, other.Status, other.Header.Get("Location"), f.Status)
		}
		return fmt.Sprintf("%s was redirected to %s and got a %d", name, shortURL(f.FinalURL, f.URL), f.Status)
	case 1:
		return fmt.Sprintf("%s followed a %d to %s and got a %d", name, f.Redirects[0].Status, f.Redirects[0].Location, f.Status)
	default:
		return fmt.Sprintf("%s followed %d redirects, the first a %d to %s, to %s and got a %d",
			name, len(f.Redirects), f.Redirects[0].Status, f.Redirects[0].Location, shortURL(f.FinalURL, f.URL), f.Status)
	}
}

// returned phrases what the side o that was not redirected did, given the
// follower f.
func returned(name string, o, f *answer.Answer) string {
	if !isRedirect(o.Status) {
		return fmt.Sprintf("%s was not redirected and answered %d", name, o.Status)
	}
	loc := o.Header.Get("Location")
	if len(f.Redirects) == 0 || (f.Redirects[0].Status == o.Status && f.Redirects[0].Location == loc) {
		return fmt.Sprintf("%s returned the %d", name, o.Status)
	}
	return fmt.Sprintf("%s returned a %d to %s", name, o.Status, loc)
}

func isRedirect(status int) bool { return status >= 300 && status < 400 }

// shortURL writes target relative to from when both are on the same origin,
// as a Location header usually does.
func shortURL(target, from string) string {
	t, err1 := url.Parse(target)
	f, err2 := url.Parse(from)
	if err1 != nil || err2 != nil || t.Scheme != f.Scheme || t.Host != f.Host {
		return target
	}
	return t.RequestURI()
}
