package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
)

// joinWindow is how long TestConcurrentUsers waits for the second user's
// subgraph request before it concludes that the engine did not send one
// (it merged the second user's fetch into the first's). It bounds the
// observation of an absence, not a duration that the test asserts; when
// the request does come, the wait ends at once.
const joinWindow = 2 * time.Second

// withHeaderTemplate returns routerConfig with a fetch header NAME: "{{
// .request.headers.NAME }}" for each of names on every subgraph: the
// engine then renders the gateway request's headers into each fetch's
// input, which is what its subgraph request deduplication keys on.
func withHeaderTemplate(t *testing.T, routerConfig []byte, names ...string) []byte {
	t.Helper()
	var rc map[string]any
	if err := json.Unmarshal(routerConfig, &rc); err != nil {
		t.Fatal(err)
	}
	sources := rc["engineConfig"].(map[string]any)["datasourceConfigurations"].([]any)
	if len(sources) == 0 {
		t.Fatal("the router config has no data sources")
	}
	for _, ds := range sources {
		fetch := ds.(map[string]any)["customGraphql"].(map[string]any)["fetch"].(map[string]any)
		header := map[string]any{}
		for _, name := range names {
			header[name] = map[string]any{"values": []any{map[string]any{"staticVariableContent": "{{ .request.headers." + name + " }}"}}}
		}
		fetch["header"] = header
	}
	out, err := json.Marshal(rc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestConcurrentUsers shows what graphql-go-tools#1616 means for a gateway
// that forwards Authorization through the library: two users send the same
// query at the same time with different Authorization; the accounts
// subgraph answers with the Authorization it received, and holds the first
// user's answer until the second user's request arrives (or joinWindow
// passes without it).
//
//   - header forwarded by the library only (transport config
//     forward_headers): the engine merges the second user's fetch into the
//     first's, because its deduplication key does not see headers that the
//     RoundTripper adds: the second user gets the FIRST user's answer. The
//     library cannot prevent this from its side (it runs after the merge).
//   - the same, with the header also named in the router config's fetch
//     headers ("{{ .request.headers.Authorization }}"): the header is part
//     of the fetch's input, so the fetches are not merged and each user gets
//     their own answer.
//
// If the engine stops merging in the first case, this test fails: then the
// documentation of the hazard must change.
func TestConcurrentUsers(t *testing.T) {
	for _, path := range []env.Path{env.PathLegacy, env.PathSockets} {
		for _, templated := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/fetch_header=%v", path, templated), func(t *testing.T) {
				arrived := make(chan string, 2)
				release := make(chan struct{})
				accounts := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					io.Copy(io.Discard, r.Body)
					auth := r.Header.Get("Authorization")
					arrived <- auth
					<-release
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprintf(w, `{"data":{"me":{"id":"1234","username":%q}}}`, auth)
				})
				sg := startSubgraphs(t, accounts)
				cfg := sg.transportConfig()
				cfg.Path = path
				inv, err := transport.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { inv.Close() })
				routerConfig := sg.routerConfig()
				if templated {
					routerConfig = withHeaderTemplate(t, routerConfig, "Authorization")
				}
				gw := startGateway(t, routerConfig, inv.Client(), transport.GatewayRequestHandler)

				body := []byte(`{"query":"{ me { id username } }"}`)
				answers := map[string]chan string{"Bearer alice": make(chan string, 1), "Bearer bob": make(chan string, 1)}
				ask := func(auth string) {
					answers[auth] <- send(gw.URL, body, auth)
				}
				go ask("Bearer alice")
				if got := <-arrived; got != "Bearer alice" {
					t.Fatalf("first subgraph request had Authorization %q", got)
				}
				go ask("Bearer bob")
				bobSent := false
				select {
				case got := <-arrived:
					bobSent = true
					if got != "Bearer bob" {
						t.Errorf("second subgraph request had Authorization %q, want Bearer bob", got)
					}
				case <-time.After(joinWindow):
				}
				close(release)
				alice, bob := <-answers["Bearer alice"], <-answers["Bearer bob"]
				t.Logf("bob's request reached the subgraph: %v; alice got %s; bob got %s", bobSent, alice, bob)

				if want := `{"data":{"me":{"id":"1234","username":"Bearer alice"}}}`; alice != want {
					t.Errorf("alice got %s, want %s", alice, want)
				}
				bobsOwn := `{"data":{"me":{"id":"1234","username":"Bearer bob"}}}`
				if templated {
					if !bobSent || bob != bobsOwn {
						t.Errorf("with the fetch header template, bob's fetch must not be merged: sent %v, got %s", bobSent, bob)
					}
				} else if bobSent || bob == bobsOwn {
					t.Errorf("the engine no longer merges fetches that differ only in headers the RoundTripper adds (graphql-go-tools#1616): sent %v, got %s; update the documentation", bobSent, bob)
				}
			})
		}
	}
}

// send posts body to a gateway as a user with Authorization auth and
// returns the answer's body, or the error as text.
func send(url string, body []byte, auth string) string {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%s", b)
}
