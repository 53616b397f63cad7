package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/cmd/fusion-transport/internal/corpus"
	"github.com/fusiongo/transport/cmd/fusion-transport/internal/schemas"
	"github.com/fusiongo/transport/compare"
	"github.com/fusiongo/transport/env"
)

// TestRecordedCorpusReplays records source schema requests the way a
// gateway in production would (compare.Recorder on the legacy path), then
// replays the recorded corpus through the compare command against the same
// source schemas: a clean report, exit 0.
func TestRecordedCorpusReplays(t *testing.T) {
	srv, err := schemas.Start(schemas.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	rec, err := compare.NewRecorder(compare.RecorderOptions{Dir: filepath.Join(dir, "corpus"), Rate: 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := env.Config{SourceSchemas: map[string]env.SourceSchema{}}
	var yaml strings.Builder
	yaml.WriteString("source_schemas:\n")
	var opts []transport.Option
	for _, name := range schemas.Names {
		cfg.SourceSchemas[name] = env.SourceSchema{URL: srv.URLs[name]}
		fmt.Fprintf(&yaml, "  %s:\n    url: %s\n", name, srv.URLs[name])
		opts = append(opts, transport.WithSchemaOptions(name, transport.SchemaOptions{Middleware: []func(http.RoundTripper) http.RoundTripper{rec.Middleware(name)}}))
	}
	gateway, err := transport.New(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := compare.ReadCorpus(bytes.NewReader(corpus.Builtin))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		resp, err := gateway.Post(context.Background(), r.Schema, r.Body)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	gateway.Close()
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	if rec.Recorded() == 0 {
		t.Fatal("nothing was recorded")
	}
	cfgFile := filepath.Join(dir, "transport.yaml")
	if err := os.WriteFile(cfgFile, []byte(yaml.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"compare", "-config", cfgFile, "-corpus", filepath.Join(dir, "corpus")}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	if want := fmt.Sprintf("%d requests: %d identical, 0 different", rec.Recorded(), rec.Recorded()); !strings.Contains(out.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, out.String())
	}
}
