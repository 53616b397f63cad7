package sharekey_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fusiongo/transport/internal/sharekey"
)

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type middleware = func(http.RoundTripper) http.RoundTripper

// userKey carries the caller's user in a request's context, for token.
type userKey struct{}

// token adds Authorization for the context's user, as middleware.Token
// does for a per-user TokenFunc.
func token(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		user, _ := r.Context().Value(userKey{}).(string)
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+user)
		return next.RoundTrip(r)
	})
}

// body is a request or response body that records its reads and Close;
// fail, if set, is what every Read returns.
type body struct {
	io.Reader
	fail   error
	read   atomic.Int64
	closed atomic.Bool
}

func newBody(s string) *body { return &body{Reader: strings.NewReader(s)} }

func (b *body) Read(p []byte) (int, error) {
	if b.fail != nil {
		return 0, b.fail
	}
	n, err := b.Reader.Read(p)
	b.read.Add(int64(n))
	return n, err
}

func (b *body) Close() error { b.closed.Store(true); return nil }

// withBody replaces the request's body with b, as a signing or compressing
// middleware does.
func withBody(b io.ReadCloser) middleware {
	return func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			r = r.Clone(r.Context())
			r.Body, r.GetBody, r.ContentLength = b, nil, -1
			return next.RoundTrip(r)
		})
	}
}

const url = "http://products:4001/graphql"

func newRequest(t *testing.T, user string) *http.Request {
	t.Helper()
	ctx := context.WithValue(context.Background(), userKey{}, user)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Tenant", "acme")
	return req
}

// keyOf is the key of req as sent with auth as its Authorization ("": as
// it is) and body b.
func keyOf(t *testing.T, req *http.Request, auth string, b []byte) sharekey.Key {
	r := req.Clone(req.Context())
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	return sharekey.Of(r, b)
}

// TestProbeKey: a Probe keys the request that comes out of its middleware,
// with the body that comes out; a chain that does not hand exactly one
// request on, or hands one on whose body cannot be read whole within
// 1 MiB, keys nothing (ok false), and the call must go alone.
func TestProbeKey(t *testing.T) {
	query := []byte(`{"query":"{ a }"}`)
	big := bytes.Repeat([]byte("x"), 1<<20)
	errBroken := errors.New("body broken")
	for _, tc := range []struct {
		name string
		mws  []middleware
		// want is the key the call must have; nil: none (ok false).
		want func(t *testing.T, req *http.Request) *sharekey.Key
	}{
		{"no-op middleware: the request as it is", []middleware{func(next http.RoundTripper) http.RoundTripper { return next }},
			func(t *testing.T, req *http.Request) *sharekey.Key { k := keyOf(t, req, "", query); return &k }},
		{"the token it adds is in the key", []middleware{token},
			func(t *testing.T, req *http.Request) *sharekey.Key {
				k := keyOf(t, req, "Bearer alice", query)
				return &k
			}},
		{"a body it puts in place, at 1 MiB", []middleware{withBody(io.NopCloser(bytes.NewReader(big)))},
			func(t *testing.T, req *http.Request) *sharekey.Key { k := keyOf(t, req, "", big); return &k }},
		{"a body it puts in place, over 1 MiB", []middleware{withBody(io.NopCloser(io.MultiReader(bytes.NewReader(big), strings.NewReader("y"))))}, nil},
		{"a body it puts in place that cannot be read", []middleware{withBody(&body{fail: errBroken})}, nil},
		{"sends twice", []middleware{func(next http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				next.RoundTrip(r.Clone(r.Context()))
				return next.RoundTrip(r.Clone(r.Context()))
			})
		}}, nil},
		{"fails", []middleware{func(http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, errBroken })
		}}, nil},
		{"a context of its own", []middleware{func(next http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				return next.RoundTrip(r.WithContext(context.Background()))
			})
		}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := sharekey.NewProbe(tc.mws)
			req := newRequest(t, "alice")
			k, ok := p.Key(req, query)
			want := (*sharekey.Key)(nil)
			if tc.want != nil {
				want = tc.want(t, req)
			}
			switch {
			case want == nil && ok:
				t.Fatal("Key ok, want none: the call must go alone")
			case want != nil && !ok:
				t.Fatal("Key not ok, want the key of the request as sent")
			case want != nil && k != *want:
				t.Fatal("Key differs from the key of the request as sent")
			}
			if req.Header.Get("Authorization") != "" {
				t.Error("the probe changed the caller's request")
			}
		})
	}
}

// TestProbeTellsUsersApart: through a token middleware, two users' calls
// of one query have different keys, and two calls of one user one key.
func TestProbeTellsUsersApart(t *testing.T) {
	p := sharekey.NewProbe([]middleware{token})
	query := []byte(`{"query":"{ a }"}`)
	key := func(user string) sharekey.Key {
		k, ok := p.Key(newRequest(t, user), query)
		if !ok {
			t.Fatalf("Key for %s not ok", user)
		}
		return k
	}
	if key("alice") == key("bob") {
		t.Error("alice's and bob's calls have one key")
	}
	if key("alice") != key("alice") {
		t.Error("two calls of alice have different keys")
	}
	other, ok := p.Key(newRequest(t, "alice"), []byte(`{"query":"{ b }"}`))
	if !ok || other == key("alice") {
		t.Error("two queries of alice have one key")
	}
}

// TestProbeMarksItsContext: the middleware sees a context that IsProbe
// reports; any other context it does not.
func TestProbeMarksItsContext(t *testing.T) {
	var seen atomic.Int64
	p := sharekey.NewProbe([]middleware{func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if sharekey.IsProbe(r.Context()) {
				seen.Add(1)
			}
			return next.RoundTrip(r)
		})
	}})
	if _, ok := p.Key(newRequest(t, "alice"), nil); !ok {
		t.Fatal("Key not ok")
	}
	if seen.Load() != 1 {
		t.Error("the middleware did not see a probe's context")
	}
	if sharekey.IsProbe(context.Background()) || sharekey.IsProbe(newRequest(t, "alice").Context()) {
		t.Error("IsProbe reports a context that is no probe's")
	}
}

// TestProbeBodies: the probe leaves the caller's body unread and open
// whatever the middleware does, closes the body that a middleware put in
// place, and closes an answer that a middleware gave in the probe's place.
func TestProbeBodies(t *testing.T) {
	t.Run("the caller's body", func(t *testing.T) {
		// A middleware that reads whatever body it gets, as a signer does.
		p := sharekey.NewProbe([]middleware{func(next http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if r.Body != nil {
					b, _ := io.ReadAll(r.Body)
					r = r.Clone(r.Context())
					r.Body = io.NopCloser(bytes.NewReader(b))
				}
				return next.RoundTrip(r)
			})
		}})
		for _, given := range [][]byte{nil, []byte(`{"query":"{ a }"}`)} {
			req := newRequest(t, "alice")
			own := newBody(`{"query":"{ a }"}`)
			req.Body = own
			if _, ok := p.Key(req, given); !ok {
				t.Fatal("Key not ok")
			}
			if own.read.Load() != 0 || own.closed.Load() {
				t.Errorf("given %q: the caller's body was read (%d bytes) or closed (%t) by the probe", given, own.read.Load(), own.closed.Load())
			}
		}
	})
	t.Run("a body a middleware put in place", func(t *testing.T) {
		put := newBody("signed")
		if _, ok := sharekey.NewProbe([]middleware{withBody(put)}).Key(newRequest(t, "alice"), nil); !ok {
			t.Fatal("Key not ok")
		}
		if !put.closed.Load() {
			t.Error("the body the middleware put in place was not closed")
		}
	})
	t.Run("an answer in the probe's place", func(t *testing.T) {
		answer := newBody(`{"data":{}}`)
		p := sharekey.NewProbe([]middleware{func(http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: http.StatusOK, Body: answer, Request: r}, nil
			})
		}})
		if _, ok := p.Key(newRequest(t, "alice"), nil); ok {
			t.Error("Key ok for a call that the middleware answered itself")
		}
		if !answer.closed.Load() {
			t.Error("the middleware's own answer was not closed")
		}
	})
}

// TestNewProbe: without a middleware there is no probe (the request as it
// is is the request as sent); nil entries are skipped.
func TestNewProbe(t *testing.T) {
	if p := sharekey.NewProbe(nil); p != nil {
		t.Error("NewProbe(nil) is a probe")
	}
	if p := sharekey.NewProbe([]middleware{nil, nil}); p != nil {
		t.Error("NewProbe of nil entries is a probe")
	}
	p := sharekey.NewProbe([]middleware{nil, token, nil})
	req := newRequest(t, "alice")
	k, ok := p.Key(req, nil)
	if !ok || k != keyOf(t, req, "Bearer alice", nil) {
		t.Errorf("Key through a chain with nil entries: ok %t, key as sent %t", ok, k == keyOf(t, req, "Bearer alice", nil))
	}
}

// TestProbeEach: Each hands the request as the middleware would send it,
// with its body, to f once; a probe that cannot tell calls f never.
func TestProbeEach(t *testing.T) {
	query := []byte(`{"query":"{ a }"}`)
	p := sharekey.NewProbe([]middleware{token})
	req := newRequest(t, "alice")
	calls := 0
	var auth, body string
	ok := p.Each(req, query, func(sent *http.Request, b []byte) {
		calls++
		auth, body = sent.Header.Get("Authorization"), string(b)
	})
	if !ok || calls != 1 || auth != "Bearer alice" || body != string(query) {
		t.Fatalf("Each: ok %t, %d calls, Authorization %q, body %q; want ok, 1 call, the token, the query", ok, calls, auth, body)
	}
	failing := sharekey.NewProbe([]middleware{func(http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, http.ErrHandlerTimeout })
	}})
	if failing.Each(newRequest(t, "alice"), query, func(*http.Request, []byte) { t.Error("f called for a probe that failed") }) {
		t.Error("Each ok for a probe whose middleware failed")
	}
}
