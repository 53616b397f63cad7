package h1

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*/want.txt from what net/http does")

// vector is one response of a seed source.
type vector struct {
	source string // directory under testdata
	name   string // unique within its source
	method string
	raw    []byte
}

// The seed sources, each a directory of testdata holding its vectors, the
// licence of the project they come from, and want.txt: one line per
// vector, its name, a tab and what net/http does with it (outcome.summary).
var sources = []string{"go", "llhttp", "http-parser", "smuggling"}

// loadVectors reads every vector of every source.
func loadVectors(tb testing.TB) []vector {
	tb.Helper()
	var all []vector
	for _, src := range sources {
		dir := filepath.Join("testdata", src)
		files, err := filepath.Glob(filepath.Join(dir, "*"))
		if err != nil {
			tb.Fatal(err)
		}
		for _, file := range files {
			var vs []vector
			switch {
			case strings.HasSuffix(file, ".vectors"):
				vs = readVectorFile(tb, src, file)
			case strings.HasSuffix(file, ".md"):
				vs = readLLHTTP(tb, src, file)
			default:
				continue
			}
			all = append(all, vs...)
		}
	}
	return all
}

// readVectorFile reads this package's vector format:
//
//	# comment
//	=== name
//	method HEAD        (optional; GET otherwise)
//	"Go-quoted bytes"  (one or more lines, concatenated)
func readVectorFile(tb testing.TB, src, file string) []vector {
	data, err := os.ReadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	var vs []vector
	for i, line := range strings.Split(string(data), "\n") {
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "=== "):
			vs = append(vs, vector{source: src, name: strings.TrimPrefix(line, "=== "), method: "GET"})
		case len(vs) == 0:
			tb.Fatalf("%s:%d: data before the first vector", file, i+1)
		case strings.HasPrefix(line, "method "):
			vs[len(vs)-1].method = strings.TrimPrefix(line, "method ")
		case strings.HasPrefix(line, `"`):
			s, err := strconv.Unquote(line)
			if err != nil {
				tb.Fatalf("%s:%d: %v", file, i+1, err)
			}
			vs[len(vs)-1].raw = append(vs[len(vs)-1].raw, s...)
		default:
			tb.Fatalf("%s:%d: unknown line %q", file, i+1, line)
		}
	}
	return vs
}

var (
	llhttpMeta   = regexp.MustCompile(`^<!-- meta=(\{.*\}) -->$`)
	llhttpOctal  = regexp.MustCompile(`\\([0-7]{1,3})`)
	llhttpHex    = regexp.MustCompile(`\\x([0-9a-fA-F]+)`)
	llhttpEscNL  = regexp.MustCompile(`\\(\r\n|\r|\n)`)
	llhttpAnyNL  = regexp.MustCompile(`\r\n|\r|\n`)
	llhttpInline = regexp.MustCompile(`\$\{(.+?)\}`)
)

// readLLHTTP reads the response vectors of one of llhttp's test/response
// markdown files, kept as they are: each ```http block after a meta
// comment whose type starts with "response", turned into bytes by the
// rules of llhttp's test/md-test.ts (the trailing newline dropped,
// escaped newlines removed, newlines made CRLF, then \r \n \t \f \xHH and
// octal escapes).
func readLLHTTP(tb testing.TB, src, file string) []vector {
	data, err := os.ReadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var vs []vector
	heading := ""
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "## ") {
			heading = strings.TrimPrefix(lines[i], "## ")
		}
		m := llhttpMeta.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		var meta struct {
			Type     string `json:"type"`
			SkipBody bool   `json:"skipBody"`
		}
		if err := json.Unmarshal([]byte(m[1]), &meta); err != nil {
			tb.Fatalf("%s:%d: %v", file, i+1, err)
		}
		if !strings.HasPrefix(meta.Type, "response") || i+1 >= len(lines) || lines[i+1] != "```http" {
			continue
		}
		start := i + 2
		end := start
		for end < len(lines) && lines[end] != "```" {
			end++
		}
		in := strings.Join(lines[start:end], "\n") + "\n"
		in = strings.TrimSuffix(in, "\n")
		in = llhttpEscNL.ReplaceAllString(in, "")
		in = llhttpAnyNL.ReplaceAllString(in, "\r\n")
		in = strings.NewReplacer(`\r`, "\r", `\n`, "\n", `\t`, "\t", `\f`, "\f").Replace(in)
		in = llhttpHex.ReplaceAllStringFunc(in, func(s string) string {
			n, _ := strconv.ParseUint(s[2:], 16, 8)
			return string([]byte{byte(n)})
		})
		in = llhttpOctal.ReplaceAllStringFunc(in, func(s string) string {
			n, _ := strconv.ParseUint(s[1:], 8, 8)
			return string([]byte{byte(n)})
		})
		if llhttpInline.MatchString(in) {
			tb.Fatalf("%s:%d: inline JavaScript is not supported", file, i+1)
		}
		method := "GET"
		if meta.SkipBody {
			method = "HEAD" // the parser was told the response has no body
		}
		vs = append(vs, vector{
			source: src,
			name:   fmt.Sprintf("%s:%d %s", filepath.Base(file), i+1, heading),
			method: method,
			raw:    []byte(in),
		})
		i = end
	}
	return vs
}

// readWant reads a source's want.txt.
func readWant(tb testing.TB, src string) map[string]string {
	data, err := os.ReadFile(filepath.Join("testdata", src, "want.txt"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		tb.Fatal(err)
	}
	want := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if name, w, ok := strings.Cut(line, "\t"); ok && !strings.HasPrefix(line, "#") {
			want[name] = w
		}
	}
	return want
}

// TestVectors runs every seed vector as a test case: what net/http does
// must be what want.txt records (so the notes stay true), and h1 must do
// the same (differ).
func TestVectors(t *testing.T) {
	vs := loadVectors(t)
	counts := map[string]int{}
	got := map[string]map[string]string{}
	for _, v := range vs {
		counts[v.source]++
		if got[v.source] == nil {
			got[v.source] = map[string]string{}
		}
		if _, dup := got[v.source][v.name]; dup {
			t.Errorf("%s: duplicate vector name %q", v.source, v.name)
		}
		got[v.source][v.name] = parseStd(v.raw, v.method).summary()
	}
	for _, src := range sources {
		t.Logf("%s: %d vectors", src, counts[src])
		if counts[src] == 0 {
			t.Errorf("%s: no vectors", src)
		}
	}
	if *update {
		for src, m := range got {
			var b bytes.Buffer
			b.WriteString("# What net/http (Go 1.26 http.ReadResponse plus a drained body) does with each vector; see outcome.summary.\n")
			names := make([]string, 0, len(m))
			for name := range m {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				fmt.Fprintf(&b, "%s\t%s\n", name, m[name])
			}
			if err := os.WriteFile(filepath.Join("testdata", src, "want.txt"), b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	wants := map[string]map[string]string{}
	for _, src := range sources {
		wants[src] = readWant(t, src)
	}
	for _, v := range vs {
		t.Run(v.source+"/"+v.name, func(t *testing.T) {
			if w := wants[v.source][v.name]; w != got[v.source][v.name] {
				t.Errorf("net/http: %s, want.txt says %q", got[v.source][v.name], w)
			}
			if d := differ(v.raw, v.method); d != "" {
				t.Errorf("%s %q: %s", v.method, trunc(v.raw), d)
			}
		})
	}
}
