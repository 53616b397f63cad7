package transport_test

// Dedupe and the credentials a request gets on its way to the wire: two
// users never share an answer, whether their Authorization comes from the
// header rules (HeaderValues, before dedupe) or from a Token in
// SchemaOptions.AttemptMiddleware (inside dedupe, retry and hedge).

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/middleware"
)

// userKey is the context key of the user a test call is made for.
type userKey struct{}

// asUser is the context of a call for user: the user as a context value
// (what a TokenFunc reads) and a gateway request with an X-User header
// (what a HeaderValueFunc reads).
func asUser(user string) context.Context {
	return context.WithValue(gatewayCtx("X-User", user), userKey{}, user)
}

// noCredentials is the user that has no token: its TokenFunc fails.
const noCredentials = "nobody"

// tokenFor is the Authorization of user.
func tokenFor(user string) string { return "Bearer " + user + "-token" }

// userToken is a TokenFunc that takes the user from the call's context.
func userToken(ctx context.Context) (string, error) {
	user, _ := ctx.Value(userKey{}).(string)
	if user == "" || user == noCredentials {
		return "", errors.New("no token for this user")
	}
	return tokenFor(user), nil
}

// credentials are the two ways a test gives a call its Authorization.
var credentials = map[string]transport.SchemaOptions{
	// The defect: Token inside dedupe, where docs/configuration.md puts it.
	"AttemptMiddleware Token": {AttemptMiddleware: []func(http.RoundTripper) http.RoundTripper{middleware.Token(userToken)}},
	// The header rules run before dedupe: already in its key.
	"HeaderValues": {HeaderValues: map[string]transport.HeaderValueFunc{
		"Authorization": func(_ context.Context, gw *http.Request) (string, bool) {
			if gw == nil {
				return "", false
			}
			return tokenFor(gw.Header.Get("X-User")), true
		},
	}},
}

// TestDedupeAttemptCredentials: with dedupe on, alice's query is held at
// the source schema while a second caller sends the same query. Another
// user's call is not shared, whichever stage adds its credentials: the
// source schema gets two requests, each with its caller's Authorization,
// and each caller its own answer. A call whose TokenFunc fails goes alone
// and fails as its attempt does. The same user's call still shares: one
// request. The held request is let go once the second caller has either
// joined alice's call (the dedupe hook) or sent its own request, or failed.
func TestDedupeAttemptCredentials(t *testing.T) {
	tests := []struct {
		creds    string
		second   string   // the second caller's user; the first is alice
		wantAuth []string // the Authorization of each request the source schema got, in order
		wantErr  string   // in the second caller's error; "": it gets its own answer
	}{
		{"AttemptMiddleware Token", "bob", []string{tokenFor("alice"), tokenFor("bob")}, ""},
		{"AttemptMiddleware Token", "alice", []string{tokenFor("alice")}, ""},
		{"AttemptMiddleware Token", noCredentials, []string{tokenFor("alice")}, "Authorization token: no token for this user"},
		{"HeaderValues", "bob", []string{tokenFor("alice"), tokenFor("bob")}, ""},
		{"HeaderValues", "alice", []string{tokenFor("alice")}, ""},
	}
	for _, p := range paths {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/%s/alice+%s", p, tt.creds, tt.second), func(t *testing.T) {
				arrived := make(chan string, 4) // the Authorization of each request, as it comes
				release := make(chan struct{})
				srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
					auth := r.Header.Get("Authorization")
					arrived <- auth
					if auth == tokenFor("alice") {
						select {
						case <-release:
						case <-r.Context().Done():
							return
						}
					}
					fmt.Fprintf(w, `{"data":{"auth":%q}}`, auth)
				})
				joined := make(chan int, 4)
				inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) { s.Dedupe = env.Enabled }),
					transport.WithSchemaOptions("products", credentials[tt.creds]),
					transport.WithDedupeJoinedHook(func(waiters int) { joined <- waiters }))
				const query = `{"query":"{ me }"}`

				first := postAsync(inv, asUser("alice"), "products", query)
				if got := awaitGap(t, arrived, "alice's request at the source schema"); got != tokenFor("alice") {
					t.Fatalf("alice's request carried Authorization %q", got)
				}
				second := postAsync(inv, asUser(tt.second), "products", query)
				secondGot, done := awaitSecond(t, joined, arrived, second)
				close(release)
				if !done {
					secondGot = awaitGap(t, second, "the second caller's answer")
				}
				firstGot := awaitGap(t, first, "alice's answer")

				if want := fmt.Sprintf(`{"data":{"auth":%q}}`, tokenFor("alice")); firstGot.err != nil || firstGot.body != want {
					t.Errorf("alice got %q, %v; want %s", firstGot.body, firstGot.err, want)
				}
				switch want := fmt.Sprintf(`{"data":{"auth":%q}}`, tokenFor(tt.second)); {
				case tt.wantErr != "":
					if secondGot.err == nil || !strings.Contains(secondGot.err.Error(), tt.wantErr) {
						t.Errorf("%s got %q, %v; want an error with %q", tt.second, secondGot.body, secondGot.err, tt.wantErr)
					}
				case secondGot.err != nil || secondGot.body != want:
					t.Errorf("%s got %q, %v; want %s", tt.second, secondGot.body, secondGot.err, want)
				}
				var gotAuth []string
				for _, r := range srv.Requests() {
					gotAuth = append(gotAuth, r.Header.Get("Authorization"))
				}
				if !slices.Equal(gotAuth, tt.wantAuth) {
					t.Errorf("the source schema got requests with Authorization %q; want %q", gotAuth, tt.wantAuth)
				}
			})
		}
	}
}

// awaitSecond waits until the second caller of TestDedupeAttemptCredentials
// is past dedupe: it joined the call in flight (a join with 2 waiters),
// its own request reached the source schema, or its call ended (then done
// is true and got is what it got).
func awaitSecond(t *testing.T, joined <-chan int, arrived <-chan string, second <-chan postResult) (got postResult, done bool) {
	t.Helper()
	guard := time.NewTimer(gapGuard)
	defer guard.Stop()
	for {
		select {
		case n := <-joined:
			if n >= 2 {
				return postResult{}, false
			}
		case <-arrived:
			return postResult{}, false
		case got = <-second:
			return got, true
		case <-guard.C:
			t.Fatal("the second caller neither joined, nor sent its request, nor ended")
		}
	}
}

// awaitGap receives from ch; it fails the test if nothing comes within
// gapGuard, which only keeps a broken build from hanging.
func awaitGap[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	guard := time.NewTimer(gapGuard)
	defer guard.Stop()
	select {
	case v := <-ch:
		return v
	case <-guard.C:
		t.Fatalf("nothing came within %v: %s", gapGuard, what)
		panic("unreachable")
	}
}
