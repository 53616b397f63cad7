package shadow_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/shadow"
)

// fixed is an Invoker that answers every request with one body.
type fixed string

func (f fixed) Post(context.Context, string, []byte) (*http.Response, error) {
	rec := httptest.NewRecorder()
	rec.Header().Set("Content-Type", "application/json")
	io.WriteString(rec, string(f))
	return rec.Result(), nil
}
func (f fixed) Do(ctx context.Context, s string, _ *http.Request) (*http.Response, error) {
	return f.Post(ctx, s, nil)
}
func (fixed) Reload(env.Config) error { return nil }
func (fixed) Close() error            { return nil }

// printer publishes mismatches to standard output.
type printer struct{}

func (printer) Publish(_ context.Context, m shadow.Mismatch) {
	for _, d := range m.Differences {
		fmt.Printf("%s %s %s\n", m.Schema, d.Kind, d.Path)
	}
}
func (printer) Compared(context.Context, string, bool)  {}
func (printer) Dropped(context.Context, string, string) {}

// Example serves a query from the primary and compares the candidate's
// answer; the caller gets the primary's answer whatever the candidate says.
func Example() {
	s := shadow.New(fixed(`{"data":{"price":899}}`), fixed(`{"data":{"price":900}}`), shadow.Options{Rate: 1, Publisher: printer{}})
	resp, err := s.Post(context.Background(), "products", []byte(`{"query":"{ price }"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	s.Close() // waits for the comparison
	fmt.Println(strings.TrimSpace(string(body)))
	// Output:
	// products body data.price
	// {"data":{"price":899}}
}
