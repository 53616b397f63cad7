package compare_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fusiongo/transport"
	"github.com/fusiongo/transport/answer"
	"github.com/fusiongo/transport/compare"
	"github.com/fusiongo/transport/env"
)

// TestLegacyAgainstSockets runs the harness over the project's two real
// paths, on the differences their design documents: both forward the
// configured gateway headers alike, and only the legacy path follows a
// redirect.
func TestLegacyAgainstSockets(t *testing.T) {
	checkGoroutines(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/graphql", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"data":{"auth":%q}}`, r.Header.Get("Authorization"))
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		http.Redirect(w, r, "/graphql", http.StatusTemporaryRedirect)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	urls := map[string]string{"accounts": srv.URL + "/graphql", "reviews": srv.URL + "/moved"}
	cfg := env.Config{ForwardHeaders: []string{"Authorization"}, SourceSchemas: make(map[string]env.SourceSchema)}
	for name, u := range urls {
		cfg.SourceSchemas[name] = env.SourceSchema{URL: u}
	}
	legacy, sockets := bothPaths(t, cfg)

	corpus := []compare.Request{
		{Name: "accounts/users", Schema: "accounts", Body: []byte(usersQuery), Headers: map[string]string{"Authorization": "Bearer 1"}},
		{Name: "reviews/top", Schema: "reviews", Body: []byte(usersQuery)},
	}
	report, err := compare.Run(context.Background(), corpus,
		compare.Side{Name: "legacy", Invoker: legacy},
		compare.Side{Name: "sockets", Invoker: sockets},
		compare.Options{URLs: urls})
	if err != nil {
		t.Fatal(err)
	}
	if res := report.Results[0]; !res.Identical() || string(res.A.Body) != `{"data":{"auth":"Bearer 1"}}` {
		t.Errorf("accounts/users: differences %+v, legacy body %s; want identical, with the header forwarded", res.Differences, res.A.Body)
	}
	want := []answer.Difference{{
		Kind: answer.KindRedirect, A: srv.URL + "/graphql", B: srv.URL + "/moved",
		Explanation: "legacy followed a 307 to /graphql and got a 200; sockets returned the 307",
	}}
	if diff := cmp.Diff(want, report.Results[1].Differences, diffOpts...); diff != "" {
		t.Errorf("reviews/top differences mismatch (-want +got):\n%s", diff)
	}
}

// bothPaths builds an invoker for cfg on each of the project's paths,
// legacy (taking no proxy from the environment) and sockets, and closes
// them when the test ends.
func bothPaths(t *testing.T, cfg env.Config) (legacy, sockets transport.Invoker) {
	t.Helper()
	cfg.Path = env.PathLegacy
	legacy, err := transport.New(cfg, transport.WithLookupEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { legacy.Close() })
	cfg.Path = env.PathSockets
	sockets, err = transport.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sockets.Close() })
	return legacy, sockets
}
