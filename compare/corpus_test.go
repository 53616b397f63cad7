package compare_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fusiongo/transport/compare"
)

func TestReadCorpus(t *testing.T) {
	in := "\uFEFF# accounts\r\n" +
		`{"name":"accounts/users","schema":"accounts","body":{"query":"{ users { id } }"},"headers":{"Authorization":"Bearer 1"}}` + "\r\n" +
		"\n   \n// batches\n" +
		`  {"name":"reviews/batch","schema":"reviews","body":[{"query":"{ a }"}]}  ` + "\n" +
		`{"name":"health","schema":"reviews","method":"GET","path":"/health"}` // no final newline
	got, err := compare.ReadCorpus(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []compare.Request{
		{Name: "accounts/users", Schema: "accounts", Body: []byte(`{"query":"{ users { id } }"}`), Headers: map[string]string{"Authorization": "Bearer 1"}},
		{Name: "reviews/batch", Schema: "reviews", Body: []byte(`[{"query":"{ a }"}]`)},
		{Name: "health", Schema: "reviews", Method: "GET", Path: "/health"},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("ReadCorpus mismatch (-want +got):\n%s", diff)
	}
}

func TestReadCorpusErrors(t *testing.T) {
	const ok = `{"name":"a","schema":"s","body":{}}`
	tests := []struct {
		name     string
		in       string
		wantLine int
		wantErr  string
	}{
		{"bad JSON", ok + "\n# c\n{\"name\":", 3, "invalid JSON"},
		{"two values", `{"name":"a","schema":"s","body":{}} {}`, 1, "more than one value"},
		{"unknown key", `{"name":"a","schema":"s","body":{},"header":{}}`, 1, `unknown field "header"`},
		{"missing name", "\n" + `{"schema":"s","body":{}}`, 2, `missing "name"`},
		{"missing schema", `{"name":"a","body":{}}`, 1, `missing "schema"`},
		{"missing body", `{"name":"a","schema":"s"}`, 1, `missing "body"`},
		{"null body", `{"name":"a","schema":"s","body":null}`, 1, `missing "body"`},
		{"string body", `{"name":"a","schema":"s","body":"{}"}`, 1, `"body" must be a JSON object or array, got "{}"`},
		{"method without path", `{"name":"a","schema":"s","method":"GET"}`, 1, `"method" and "path" go together`},
		{"bad method", `{"name":"a","schema":"s","method":"GE T","path":"/"}`, 1, `invalid "method" "GE T"`},
		{"bad path", `{"name":"a","schema":"s","method":"GET","path":"%zz"}`, 1, `invalid "path" "%zz"`},
		{"duplicate name", ok + "\n// x\n\n" + ok, 4, `duplicate name "a" (first on line 1)`},
		{"not an object", `[1]`, 1, "invalid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := compare.ReadCorpus(strings.NewReader(tt.in))
			var ce *compare.CorpusError
			if !errors.As(err, &ce) {
				t.Fatalf("ReadCorpus error = %v, want a *CorpusError", err)
			}
			if ce.Line != tt.wantLine {
				t.Errorf("Line = %d, want %d (%v)", ce.Line, tt.wantLine, err)
			}
			if !strings.HasPrefix(err.Error(), fmt.Sprintf("corpus line %d: ", tt.wantLine)) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %q, want corpus line %d: ...%s...", err, tt.wantLine, tt.wantErr)
			}
		})
	}
}

func FuzzReadCorpus(f *testing.F) {
	f.Add(`{"name":"a","schema":"s","body":{}}` + "\n# x\n" + `{"name":"b","schema":"s","method":"GET","path":"/"}`)
	f.Add(`{"name":"a","schema":"s","body":[1,{"x":null}],"headers":{"A":"b"}}`)
	f.Add("\uFEFF//\n\n{")
	f.Fuzz(func(t *testing.T, in string) {
		corpus, err := compare.ReadCorpus(strings.NewReader(in))
		if err != nil {
			var ce *compare.CorpusError
			if !errors.As(err, &ce) || ce.Line < 1 {
				t.Fatalf("error %v is not a *CorpusError with a line", err)
			}
			return
		}
		names := make(map[string]bool)
		for _, r := range corpus {
			if r.Name == "" || r.Schema == "" || names[r.Name] {
				t.Fatalf("accepted a bad entry: %+v", r)
			}
			names[r.Name] = true
		}
	})
}
