package compare

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
)

// Request is one corpus entry: a source schema request made on behalf of a
// gateway request. In a corpus file it is one line of JSON:
//
//	{"name":"accounts/users","schema":"accounts","body":{"query":"{ users { id } }"},"headers":{"Authorization":"Bearer 1"}}
type Request struct {
	// Name identifies the request in the report. Required, and unique
	// within a corpus.
	Name string `json:"name"`

	// Schema is the source schema the request is for. Required.
	Schema string `json:"schema"`

	// Body is sent verbatim: a JSON object (one GraphQL request) or array
	// (a batch). Required for a Post; optional when Method is set.
	Body json.RawMessage `json:"body,omitempty"`

	// Headers are the headers of the gateway request on whose behalf the
	// request is made. The Invoker decides which of them reach the source
	// schema. Nil means a gateway request without headers.
	Headers map[string]string `json:"headers,omitempty"`

	// Method, together with Path, sends the request through Invoker.Do
	// instead of Invoker.Post, e.g. "GET" for a persisted query or a health
	// check. Empty means a Post.
	Method string `json:"method,omitempty"`

	// Path is the URL of a Do request: absolute, or a reference resolved
	// against Options.URLs[Schema] by RFC 3986 rules (so "/v2" replaces the
	// whole path and "v2" only its last segment). Set exactly when Method is.
	Path string `json:"path,omitempty"`
}

// isDo reports whether r is sent through Invoker.Do.
func (r *Request) isDo() bool { return r.Method != "" }

// validate checks what a request needs on its own; uniqueness and URL
// resolution need the whole corpus and the Options, and are checked by the
// callers.
func (r *Request) validate() error {
	switch {
	case r.Name == "":
		return errors.New(`missing "name"`)
	case r.Schema == "":
		return errors.New(`missing "schema"`)
	case (r.Method == "") != (r.Path == ""):
		return fmt.Errorf(`"method" and "path" go together: got method %q, path %q`, r.Method, r.Path)
	}
	if r.Method != "" && !isToken(r.Method) {
		return fmt.Errorf(`invalid "method" %q: not an HTTP token`, r.Method)
	}
	if r.Path != "" {
		if _, err := url.Parse(r.Path); err != nil {
			return fmt.Errorf(`invalid "path" %q: %w`, r.Path, err)
		}
	}
	body := bytes.TrimSpace(r.Body)
	if len(body) == 0 || bytes.Equal(body, []byte("null")) {
		if !r.isDo() {
			return errors.New(`missing "body" (a Post needs a JSON object or array)`)
		}
		return nil
	}
	if body[0] != '{' && body[0] != '[' {
		return fmt.Errorf(`"body" must be a JSON object or array, got %s`, clip(string(body), 40))
	}
	return nil
}

// isToken reports whether s is an HTTP token (RFC 9110, section 5.6.2), the
// syntax of a method.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		isAlnum := c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !isAlnum && !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return true
}

// CorpusError is a problem with one line of a corpus.
type CorpusError struct {
	// Line is the corpus line that failed, counting from 1.
	Line int
	// Err is why it failed.
	Err error
}

func (e *CorpusError) Error() string { return fmt.Sprintf("corpus line %d: %v", e.Line, e.Err) }

func (e *CorpusError) Unwrap() error { return e.Err }

// ReadCorpus reads a JSONL corpus: one Request per line. Blank lines and
// lines that start with # or // are skipped. Unknown keys are errors, so a
// misspelt "headers" does not silently send a request without them. The
// first problem is returned as a *CorpusError naming the line: bad JSON, a
// missing name, schema or body, a method without a path, or a duplicate name.
func ReadCorpus(r io.Reader) ([]Request, error) {
	br := bufio.NewReader(r) // not a Scanner: a line may be longer than any fixed buffer
	var corpus []Request
	firstLine := make(map[string]int) // name -> line it was first seen on
	for n := 1; ; n++ {
		line, readErr := br.ReadBytes('\n')
		if readErr != nil && readErr != io.EOF {
			return nil, &CorpusError{Line: n, Err: readErr}
		}
		if n == 1 {
			line = bytes.TrimPrefix(line, []byte("\uFEFF")) // editors on Windows write a BOM
		}
		line = bytes.TrimSpace(line)
		if len(line) > 0 && !bytes.HasPrefix(line, []byte("#")) && !bytes.HasPrefix(line, []byte("//")) {
			req, err := parseLine(line)
			if err != nil {
				return nil, &CorpusError{Line: n, Err: err}
			}
			if first, ok := firstLine[req.Name]; ok {
				return nil, &CorpusError{Line: n, Err: fmt.Errorf("duplicate name %q (first on line %d)", req.Name, first)}
			}
			firstLine[req.Name] = n
			corpus = append(corpus, req)
		}
		if readErr == io.EOF {
			return corpus, nil
		}
	}
}

func parseLine(line []byte) (Request, error) {
	var req Request
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return Request{}, fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Request{}, errors.New("invalid JSON: more than one value on the line")
	}
	if err := req.validate(); err != nil {
		return Request{}, err
	}
	return req, nil
}

// validateCorpus checks a corpus that may have been built in Go rather than
// read by ReadCorpus, so that Run sends nothing when any entry is unusable.
func validateCorpus(corpus []Request) error {
	firstIndex := make(map[string]int, len(corpus))
	for i := range corpus {
		req := &corpus[i]
		if err := req.validate(); err != nil {
			return fmt.Errorf("corpus entry %d (%q): %w", i, req.Name, err)
		}
		if first, ok := firstIndex[req.Name]; ok {
			return fmt.Errorf("corpus entry %d: duplicate name %q (first at entry %d)", i, req.Name, first)
		}
		firstIndex[req.Name] = i
	}
	return nil
}
