package corpus

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/fusiongo/transport/cmd/fusion-transport/internal/schemas"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// entry is one line of the corpus.
type entry struct {
	Name    string            `json:"name"`
	Schema  string            `json:"schema"`
	Body    json.RawMessage   `json:"body"`
	Headers map[string]string `json:"headers"`
	Method  string            `json:"method"`
	Path    string            `json:"path"`
}

// forwarded are the gateway request headers the harness passes on.
var forwarded = []string{"Authorization", "X-Request-Id"}

func parse(t *testing.T) []entry {
	t.Helper()
	var out []entry
	sc := bufio.NewScanner(bytes.NewReader(Builtin))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		var e entry
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		if dec.More() {
			t.Fatalf("line %d: more than one JSON value", n)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestBuiltinWellFormed(t *testing.T) {
	entries := parse(t)
	if len(entries) < 32 {
		t.Errorf("%d entries, want at least 32", len(entries))
	}
	seen := map[string]bool{}
	perSchema := map[string]int{}
	for _, e := range entries {
		if seen[e.Name] {
			t.Errorf("duplicate name %q", e.Name)
		}
		seen[e.Name] = true
		if !slices.Contains(schemas.Names, e.Schema) {
			t.Errorf("%s: unknown schema %q", e.Name, e.Schema)
		}
		perSchema[e.Schema]++
		if !strings.HasPrefix(e.Name, e.Schema+"/") || len(e.Name) == len(e.Schema)+1 {
			t.Errorf("%s: want a name of the form %s/short-description", e.Name, e.Schema)
		}
		if b := bytes.TrimSpace(e.Body); len(b) == 0 || (b[0] != '{' && b[0] != '[') {
			t.Errorf("%s: body must be a JSON object or array, got %s", e.Name, e.Body)
		}
		for k := range e.Headers {
			if !slices.Contains(forwarded, http.CanonicalHeaderKey(k)) {
				t.Errorf("%s: header %q would not be forwarded", e.Name, k)
			}
		}
	}
	for _, name := range schemas.Names {
		if perSchema[name] == 0 {
			t.Errorf("no entry for schema %s", name)
		}
	}
	// The kinds of request the corpus promises, by name.
	for _, part := range []string{
		"deep-wave1", "deep-wave2", "deep-wave3", "deep-wave4", "alias-batch",
		"variable-batch", "request-batch", "error-unknown-field",
		"error-wrong-variable-type", "error-missing-variable", "me-authorized",
		"service-sdl", "malformed", "operation-name", "entities-unknown",
	} {
		found := false
		for name := range seen {
			found = found || strings.Contains(name, part)
		}
		if !found {
			t.Errorf("no entry named like %q", part)
		}
	}
}

// TestBuiltinAgainstSchemas sends every entry to its schema, as the harness
// does, and wants 200 with a clean answer, or for the names that say so
// GraphQL errors (error-) or 400 (malformed).
func TestBuiltinAgainstSchemas(t *testing.T) {
	srv, err := schemas.Start(schemas.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	tr := &http.Transport{DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}

	for _, e := range parse(t) {
		t.Run(e.Name, func(t *testing.T) {
			target := srv.URLs[e.Schema]
			if e.Path != "" {
				u, err := url.Parse(target)
				if err != nil {
					t.Fatal(err)
				}
				u.Path = e.Path
				target = u.String()
			}
			method := e.Method
			if method == "" {
				method = http.MethodPost
			}
			req, err := http.NewRequest(method, target, bytes.NewReader(e.Body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json")
			for k, v := range e.Headers {
				if slices.Contains(forwarded, http.CanonicalHeaderKey(k)) {
					req.Header.Set(k, v)
				}
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}

			if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d, want 200 or 400: %s", resp.StatusCode, body)
			}
			if !json.Valid(body) {
				t.Fatalf("answer is not JSON: %s", body)
			}
			hasErrors := bytes.Contains(body, []byte(`"errors":`))
			switch {
			case strings.Contains(e.Name, "malformed"):
				if resp.StatusCode != http.StatusBadRequest || !hasErrors {
					t.Errorf("want 400 with errors, got %d %s", resp.StatusCode, body)
				}
			case strings.Contains(e.Name, "/error-"):
				if resp.StatusCode != http.StatusOK || !hasErrors {
					t.Errorf("want 200 with errors, got %d %s", resp.StatusCode, body)
				}
			default:
				if resp.StatusCode != http.StatusOK || hasErrors {
					t.Errorf("want 200 without errors, got %d %s", resp.StatusCode, body)
				}
			}
		})
	}
}
