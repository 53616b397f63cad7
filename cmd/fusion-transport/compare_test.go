package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// compareSetup starts a source schema on which the two paths differ in a
// way that involves secrets, and writes a configuration and a corpus for
// it. The legacy path asks for gzip (it decompresses transparently), the
// sockets path does not, and the server answers each with its own session
// cookie: every request has a Set-Cookie difference whose values must never
// be published. products/status also gets a 502 on the sockets path.
func compareSetup(t *testing.T) (cfgFile, corpusFile string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		legacy := strings.Contains(r.Header.Get("Accept-Encoding"), "gzip")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Set-Cookie", fmt.Sprintf("session=SECRET-%v", legacy))
		if bytes.Contains(body, []byte("status")) && !legacy {
			w.WriteHeader(http.StatusBadGateway)
		}
		io.WriteString(w, `{"data":{"ok":true}}`)
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	cfgFile = filepath.Join(dir, "transport.yaml")
	if err := os.WriteFile(cfgFile, []byte("source_schemas:\n  products:\n    url: "+srv.URL+"/graphql\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var corpus strings.Builder
	for i := 1; i <= 7; i++ {
		fmt.Fprintf(&corpus, `{"name":"products/%d","schema":"products","body":{"query":"{ p%d }"},"headers":{"Authorization":"Bearer SECRET-TOKEN"}}`+"\n", i, i)
	}
	corpus.WriteString(`{"name":"products/status","schema":"products","body":{"query":"{ status }"}}` + "\n")
	corpusFile = filepath.Join(dir, "corpus.jsonl")
	if err := os.WriteFile(corpusFile, []byte(corpus.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfgFile, corpusFile
}

func runCmd(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCompareFailOn(t *testing.T) {
	cfgFile, corpusFile := compareSetup(t)
	tests := []struct {
		name  string
		flags []string
		code  int
		want  []string // in stdout, or stderr for exit 2
	}{
		{"default: any", nil, 1, []string{
			"2 distinct differences in 8 requests:\n",
			"header Set-Cookie: legacy and sockets have different Set-Cookie values ([REDACTED]) (8 requests)\n     products/1, products/2, products/3, products/4, products/5 and 3 more\n",
			"status: legacy answered 200; sockets answered 502 (1 request)\n     products/status\n",
			"8 requests: 0 identical, 8 different\n",
			"fail-on total>0: failed\n  total>0: 8 of 8 requests (100%) have a difference\n",
		}},
		{"none", []string{"-fail-on", "none"}, 0, []string{"fail-on none: passed"}},
		{"status within", []string{"-fail-on", "status>1"}, 0, []string{"fail-on status>1: passed"}},
		{"status over", []string{"-fail-on", "status>0,body>2%"}, 1, []string{"status>0: 1 of 8 requests (12.5%) has a status difference"}},
		{"header percentage", []string{"-fail-on", "header>99.9%"}, 1, []string{"header>99.9%: 8 of 8 requests (100%) have a header difference"}},
		{"ignored header", []string{"-ignore-header", "set-cookie", "-fail-on", "header>0,status>0"}, 1, []string{
			"1 distinct difference in 1 request:\n", "7 identical, 1 different", "  status>0: 1 of 8",
		}},
		{"ignored header within", []string{"-ignore-header", "X-A,Set-Cookie", "-fail-on", "header>0,total>1"}, 0, []string{"passed"}},
		{"verbose", []string{"-v", "-fail-on", "none"}, 0, []string{"DIFF products/1\n     header Set-Cookie: ", "DIFF products/status\n"}},
		{"bad spec", []string{"-fail-on", "stat>0"}, 2, []string{`compare: -fail-on: invalid fail-on spec "stat>0": threshold "stat>0": unknown kind "stat"`}},
		{"bad count", []string{"-fail-on", "body>1.5"}, 2, []string{`"body>1.5": 1.5 is not a whole number of requests; for a share write 1.5%`}},
		{"bad ignore path", []string{"-ignore-path", "errors..x"}, 2, []string{`compare: ignore path "errors..x": empty member after a dot`}},
		{"bad timing ratio", []string{"-timing-ratio", "0.5"}, 2, []string{"timing ratio 0.5: want more than 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"compare", "-config", cfgFile, "-corpus", corpusFile}, tt.flags...)
			code, stdout, stderr := runCmd(args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			where := stdout
			if tt.code == 2 {
				where = stderr
			}
			for _, w := range tt.want {
				if !strings.Contains(where, w) {
					t.Errorf("output lacks %q:\n%s", w, where)
				}
			}
			if strings.Contains(stdout+stderr, "SECRET") {
				t.Errorf("a secret is published:\n%s\n%s", stdout, stderr)
			}
		})
	}
}

func TestCompareReportFiles(t *testing.T) {
	cfgFile, corpusFile := compareSetup(t)
	dir := t.TempDir()
	junitFile, jsonFile := filepath.Join(dir, "report.xml"), filepath.Join(dir, "report.json")
	code, stdout, stderr := runCmd("compare", "-config", cfgFile, "-corpus", corpusFile, "-junit", junitFile, "-json", jsonFile, "-fail-on", "status>0", "-progress")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	if !strings.HasSuffix(stderr, "compared 8/8\n") {
		t.Errorf("stderr does not end with the progress line:\n%s", stderr)
	}

	raw, err := os.ReadFile(junitFile)
	if err != nil {
		t.Fatal(err)
	}
	var junit struct {
		XMLName  xml.Name `xml:"testsuites"`
		Tests    int      `xml:"tests,attr"`
		Failures int      `xml:"failures,attr"`
		Suites   []struct {
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Type    string `xml:"type,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(raw, &junit); err != nil {
		t.Fatalf("JUnit file does not parse: %v\n%s", err, raw)
	}
	if junit.Tests != 8 || junit.Failures != 8 || len(junit.Suites) != 1 || len(junit.Suites[0].Cases) != 8 {
		t.Fatalf("JUnit: %d tests, %d failures, %d suites", junit.Tests, junit.Failures, len(junit.Suites))
	}
	last := junit.Suites[0].Cases[7]
	if last.Name != "products/status" || last.Failure == nil || last.Failure.Type != "status,header" ||
		!strings.Contains(last.Failure.Message, "legacy answered 200; sockets answered 502; legacy and sockets have different Set-Cookie values ([REDACTED])") {
		t.Errorf("JUnit testcase products/status: %+v", last)
	}
	if strings.Contains(string(raw), "SECRET") {
		t.Errorf("the JUnit file holds a secret:\n%s", raw)
	}

	raw, err = os.ReadFile(jsonFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Report struct {
			Counts struct{ Requests, Different int }
			Kinds  map[string]int
			Groups []struct {
				Kind     string
				Path     string
				Requests []string
			}
			Results []struct {
				Name        string
				Differences []struct{ Kind, A, B string }
			}
		}
		FailOn struct {
			Spec     string
			Passed   bool
			Breaches []struct {
				Threshold    string
				Requests, Of int
			}
		} `json:"fail_on"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("JSON file does not parse: %v\n%s", err, raw)
	}
	if doc.Report.Counts.Requests != 8 || doc.Report.Counts.Different != 8 || doc.Report.Kinds["status"] != 1 || doc.Report.Kinds["header"] != 8 {
		t.Errorf("JSON counts %+v, kinds %v", doc.Report.Counts, doc.Report.Kinds)
	}
	if len(doc.Report.Groups) != 2 || doc.Report.Groups[0].Path != "Set-Cookie" || len(doc.Report.Groups[0].Requests) != 8 {
		t.Errorf("JSON groups: %+v", doc.Report.Groups)
	}
	if doc.FailOn.Spec != "status>0" || doc.FailOn.Passed || len(doc.FailOn.Breaches) != 1 || doc.FailOn.Breaches[0].Requests != 1 || doc.FailOn.Breaches[0].Of != 8 {
		t.Errorf("JSON fail_on: %+v", doc.FailOn)
	}
	if d := doc.Report.Results[0].Differences; len(d) != 1 || d[0].A != "[REDACTED]" || d[0].B != "[REDACTED]" {
		t.Errorf("JSON differences of products/1: %+v", d)
	}
	if strings.Contains(string(raw), "SECRET") {
		t.Errorf("the JSON file holds a secret:\n%s", raw)
	}
}

func TestCompareReportFileError(t *testing.T) {
	cfgFile, corpusFile := compareSetup(t)
	missing := filepath.Join(t.TempDir(), "no", "such", "dir", "report.xml")
	code, _, stderr := runCmd("compare", "-config", cfgFile, "-corpus", corpusFile, "-junit", missing)
	if code != 2 || !strings.Contains(stderr, "compare: -junit: ") {
		t.Errorf("exit %d, stderr %q; want 2 and the -junit error", code, stderr)
	}
}

func TestCompareCorpusDirectory(t *testing.T) {
	cfgFile, corpusFile := compareSetup(t)
	raw, _ := os.ReadFile(corpusFile)
	lines := strings.SplitAfter(strings.TrimSpace(string(raw)), "\n")
	dir := t.TempDir()
	// As a Recorder with Path corpus.jsonl rotates: corpus.jsonl,
	// corpus-2.jsonl, ..., corpus-10.jsonl.
	os.WriteFile(filepath.Join(dir, "corpus.jsonl"), []byte(lines[0]+lines[1]), 0o600)
	os.WriteFile(filepath.Join(dir, "corpus-2.jsonl"), []byte(lines[2]+lines[3]+lines[4]), 0o600)
	os.WriteFile(filepath.Join(dir, "corpus-10.jsonl"), []byte(lines[5]+lines[6]+lines[7]), 0o600)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a corpus"), 0o600)
	code, stdout, stderr := runCmd("compare", "-config", cfgFile, "-corpus", dir, "-v", "-fail-on", "none")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	var order []string
	for line := range strings.Lines(stdout) {
		if name, ok := strings.CutPrefix(line, "DIFF "); ok {
			order = append(order, strings.TrimSpace(name))
		}
	}
	want := []string{"products/1", "products/2", "products/3", "products/4", "products/5", "products/6", "products/7", "products/status"}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("requests in the wrong order (-want +got):\n%s", diff)
	}

	os.WriteFile(filepath.Join(dir, "corpus-3.jsonl"), []byte(lines[0]), 0o600)
	code, _, stderr = runCmd("compare", "-config", cfgFile, "-corpus", dir)
	if code != 2 || !strings.Contains(stderr, `corpus-3.jsonl: duplicate name "products/1" (first in `) {
		t.Errorf("duplicate across files: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runCmd("compare", "-config", cfgFile, "-corpus", t.TempDir())
	if code != 2 || !strings.Contains(stderr, "no *.jsonl files") {
		t.Errorf("empty directory: exit %d, stderr %q", code, stderr)
	}
}

func TestCompareFileOrder(t *testing.T) {
	files := []string{"d/corpus-10.jsonl", "d/corpus-2.jsonl", "d/a.jsonl", "d/corpus.jsonl", "d/corpus-1.jsonl", "d/corpus-x.jsonl"}
	slices.SortFunc(files, compareFileOrder)
	want := []string{"d/a.jsonl", "d/corpus.jsonl", "d/corpus-1.jsonl", "d/corpus-2.jsonl", "d/corpus-10.jsonl", "d/corpus-x.jsonl"}
	if diff := cmp.Diff(want, files); diff != "" {
		t.Errorf("order mismatch (-want +got):\n%s", diff)
	}
}

func TestCompareProgress(t *testing.T) {
	var out bytes.Buffer
	now := time.Unix(0, 0)
	p := &compareProgress{w: &out, now: func() time.Time { return now }, every: time.Second}
	for done := 1; done <= 5; done++ {
		p.update(done, 5)
		now = now.Add(400 * time.Millisecond)
	}
	// At 0s, 1.2s (done 4), and the last.
	if want := "compared 1/5\ncompared 4/5\ncompared 5/5\n"; out.String() != want {
		t.Errorf("progress:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestCompareHelp(t *testing.T) {
	code, _, stderr := runCmd("compare", "-h")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"-fail-on thresholds", "-junit file", "-json file", "-ignore-header name", "-ignore-path path", "-redact name", "-progress", "-timing-ratio", "KIND>N%", "status>0,body>2%", "[REDACTED]"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("help lacks %q:\n%s", want, stderr)
		}
	}
}
