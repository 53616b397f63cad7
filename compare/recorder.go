package compare

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	randv2 "math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/fusiongo/transport/answer"
	"github.com/fusiongo/transport/internal/answerdiff"
	"github.com/fusiongo/transport/internal/gateway"
	"github.com/fusiongo/transport/operation"
)

// DefaultRecorderMaxBodyBytes is the default of RecorderOptions.MaxBodyBytes.
const DefaultRecorderMaxBodyBytes = 1 << 20

// RecorderOptions configures NewRecorder.
type RecorderOptions struct {
	// Dir is the directory the corpus goes to, as corpus-<n>.jsonl files:
	// n starts after the highest one already there, and goes up by one at
	// each rotation. It is created if missing. Set exactly one of Dir and
	// Path.
	Dir string

	// Path is the corpus file, appended to if it exists. Rotation
	// continues in files named after it, "-<n>" before the extension
	// (corpus.jsonl, then corpus-2.jsonl, corpus-3.jsonl), n starting
	// after the highest one already there. Set exactly one of Dir and
	// Path.
	Path string

	// Rate is the fraction of requests recorded, more than 0 and at most
	// 1: 0.01 records about one request in a hundred. Required: zero is an
	// error, so that a forgotten Rate is noticed.
	Rate float64

	// MaxBodyBytes is the largest request body recorded; a larger one is
	// skipped and counted (Skipped), and never buffered beyond this size.
	// Zero means DefaultRecorderMaxBodyBytes; negative is an error.
	MaxBodyBytes int64

	// MaxFileBytes is the size at which a corpus file is closed and the
	// next one started. A line is never split, so a file may go over by
	// less than one line. Zero means no rotation; negative is an error.
	MaxFileBytes int64

	// MaxFiles is how many of the files this Recorder created are kept:
	// at each rotation beyond it, the oldest is removed. Files that were
	// there before, Path included, are never removed. Zero means all are
	// kept; negative is an error.
	MaxFiles int

	// HeaderNames names the gateway request headers recorded with each
	// request (those the Invoker would forward, such as X-Request-Id).
	// Nil records no header at all. A name that is sensitive
	// (Authorization, Cookie, Set-Cookie, Proxy-Authorization, or one in
	// Redact) is recorded with the value answer.Redacted: the corpus says
	// the header was there, never what it held. Case does not matter.
	HeaderNames []string

	// Redact names headers recorded as answer.Redacted, besides
	// Authorization, Cookie, Set-Cookie and Proxy-Authorization. Nil adds
	// none.
	Redact []string

	// RecordMutations records every request. Default false: only requests
	// that are safe to replay are recorded, the others skipped and
	// counted, because a comparison sends each request twice: a query, as
	// operation.Classify tells from the method, the URL's parameters and
	// the body (the rule retry, dedupe, the canary and shadow mode
	// follow). A request whose operation cannot be told, such as a POST of
	// a persisted query sent by hash or a GET whose query parameter does
	// not parse, is skipped.
	RecordMutations bool

	// Rand returns a number in [0, 1) that decides whether a request is
	// sampled (recorded when below Rate); it is called once per request,
	// concurrently. Nil means math/rand/v2's Float64.
	Rand func() float64
}

// Recorder samples a source schema's requests into a JSONL corpus that
// ReadCorpus reads and Run replays: it records the request body and the
// chosen gateway request headers, never the answer. Install its
// Middleware per source schema, e.g. with transport.WithSchemaOptions. A
// Recorder is safe for concurrent use; Close it to flush the last lines.
//
// Memory is bounded: a request body is buffered up to MaxBodyBytes, only
// when the request is sampled, and lines go through one buffered writer.
//
// Each entry is named "<schema>/<n>-<hash>": n counts the Recorder's
// entries from 1, so names are unique within what one Recorder wrote, and
// hash is 8 hex digits of a hash of the body salted per Recorder, so equal
// bodies recorded by one Recorder share it and names from two Recorders
// (say, before and after a restart) differ.
type Recorder struct {
	rate     float64
	maxBody  int64
	maxFile  int64
	maxFiles int
	headers  []string        // canonical HeaderNames
	redact   map[string]bool // canonical names recorded as answer.Redacted
	mutation bool            // RecordMutations
	rand     func() float64
	salt     [8]byte
	name     func(n int) string // the name of corpus file n

	seq      atomic.Int64
	recorded atomic.Int64
	skipped  atomic.Int64
	closed   atomic.Bool

	mu      sync.Mutex // guards what follows
	file    *os.File
	w       *bufio.Writer
	size    int64    // bytes in file
	n       int      // file is number n
	written []string // files this Recorder opened, oldest first
	err     error    // the first write error
}

// NewRecorder checks opts and opens the first corpus file.
func NewRecorder(opts RecorderOptions) (*Recorder, error) {
	switch {
	case (opts.Dir == "") == (opts.Path == ""):
		return nil, errors.New("compare: recorder: set exactly one of Dir and Path")
	case !(opts.Rate > 0 && opts.Rate <= 1):
		return nil, fmt.Errorf("compare: recorder: Rate %v: want more than 0 and at most 1 (0.01 records one request in a hundred)", opts.Rate)
	case opts.MaxBodyBytes < 0:
		return nil, fmt.Errorf("compare: recorder: MaxBodyBytes %d: negative", opts.MaxBodyBytes)
	case opts.MaxFileBytes < 0:
		return nil, fmt.Errorf("compare: recorder: MaxFileBytes %d: negative", opts.MaxFileBytes)
	case opts.MaxFiles < 0:
		return nil, fmt.Errorf("compare: recorder: MaxFiles %d: negative", opts.MaxFiles)
	}
	r := &Recorder{
		rate: opts.Rate, maxBody: opts.MaxBodyBytes, maxFile: opts.MaxFileBytes, maxFiles: opts.MaxFiles,
		redact: answerdiff.RedactSet(opts.Redact), mutation: opts.RecordMutations, rand: opts.Rand,
	}
	if r.maxBody == 0 {
		r.maxBody = DefaultRecorderMaxBodyBytes
	}
	if r.rand == nil {
		r.rand = randv2.Float64
	}
	for _, h := range opts.HeaderNames {
		r.headers = append(r.headers, http.CanonicalHeaderKey(h))
	}
	rand.Read(r.salt[:]) // never fails (crypto/rand)

	dir, stem, ext := opts.Dir, "corpus", ".jsonl"
	if opts.Path != "" {
		dir = filepath.Dir(opts.Path)
		base := filepath.Base(opts.Path)
		ext = filepath.Ext(base)
		stem = strings.TrimSuffix(base, ext)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("compare: recorder: %w", err)
	}
	highest, err := highestNumber(dir, stem, ext)
	if err != nil {
		return nil, fmt.Errorf("compare: recorder: %w", err)
	}
	r.name = func(n int) string {
		if n == 1 && opts.Path != "" {
			return opts.Path
		}
		return filepath.Join(dir, stem+"-"+strconv.Itoa(n)+ext)
	}
	if opts.Path == "" {
		if err := r.open(highest + 1); err != nil {
			return nil, err
		}
		return r, nil
	}
	// Path is file 1; the next rotation goes past the numbered files
	// already there.
	if err := r.open(1); err != nil {
		return nil, err
	}
	r.n = max(highest, 1)
	return r, nil
}

// highestNumber finds the highest n of the files <stem>-<n><ext> in dir.
func highestNumber(dir, stem, ext string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	highest := 0
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), stem+"-")
		if !ok {
			continue
		}
		digits, ok := strings.CutSuffix(rest, ext)
		if n, err := strconv.Atoi(digits); ok && err == nil && n > 0 && strconv.Itoa(n) == digits {
			highest = max(highest, n)
		}
	}
	return highest, nil
}

// open starts corpus file n, appending if it exists. r.mu is held, or r is
// not shared yet. Only a file that open creates may later be removed.
func (r *Recorder) open(n int) error {
	name := r.name(n)
	_, statErr := os.Stat(name)
	existed := statErr == nil
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600) // a corpus may hold user data
	if err != nil {
		return fmt.Errorf("compare: recorder: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("compare: recorder: %w", err)
	}
	r.file, r.size, r.n = f, st.Size(), n
	if r.w == nil {
		r.w = bufio.NewWriterSize(f, 64<<10)
	} else {
		r.w.Reset(f)
	}
	if !existed {
		r.written = append(r.written, name)
	}
	return nil
}

// rotate closes the current file, starts the next and removes the oldest
// beyond MaxFiles. r.mu is held.
func (r *Recorder) rotate() error {
	err := r.closeFile()
	r.file = nil // write and Close see a Recorder without a file if what follows fails
	if err != nil {
		return err
	}
	if err := r.open(r.n + 1); err != nil {
		return err
	}
	for r.maxFiles > 0 && len(r.written) > r.maxFiles {
		if err := os.Remove(r.written[0]); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("compare: recorder: removing the oldest corpus file: %w", err)
		}
		r.written = r.written[1:]
	}
	return nil
}

func (r *Recorder) closeFile() error {
	err := r.w.Flush()
	if cerr := r.file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("compare: recorder: %w", err)
	}
	return nil
}

// Recorded counts the requests written to the corpus.
func (r *Recorder) Recorded() int64 { return r.recorded.Load() }

// Skipped counts the sampled requests that were not recorded: a body over
// MaxBodyBytes, a body that is not a JSON object or array, a request that
// is not safe to replay (see RecordMutations), an unreadable body, or a
// failure to write. Requests that the sampling passed over are not
// counted.
func (r *Recorder) Skipped() int64 { return r.skipped.Load() }

// Flush writes the buffered lines to the current file.
func (r *Recorder) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.file == nil {
		return r.err
	}
	if err := r.w.Flush(); err != nil && r.err == nil {
		r.err = fmt.Errorf("compare: recorder: %w", err)
	}
	return r.err
}

// Close flushes and closes the corpus file and returns the first error met
// while writing, if any. Requests after Close pass through unrecorded.
func (r *Recorder) Close() error {
	r.closed.Store(true)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.file == nil {
		return r.err
	}
	if err := r.closeFile(); err != nil && r.err == nil {
		r.err = err
	}
	r.file = nil
	return r.err
}

// Middleware returns the middleware that records schema's requests. A
// request is recorded before it is sent, once: the hops of a redirect
// that the legacy path follows are not recorded again. It panics if
// schema is empty, since a corpus entry needs one.
func (r *Recorder) Middleware(schema string) func(http.RoundTripper) http.RoundTripper {
	if schema == "" {
		panic("compare: Recorder.Middleware needs a source schema name")
	}
	return func(next http.RoundTripper) http.RoundTripper {
		if next == nil {
			next = http.DefaultTransport
		}
		return &recordingTransport{r: r, schema: schema, next: next}
	}
}

type recordingTransport struct {
	r      *Recorder
	schema string
	next   http.RoundTripper
}

var _ http.RoundTripper = (*recordingTransport)(nil)

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.next.RoundTrip(t.r.observe(t.schema, req))
}

// observe records req if it is sampled, and returns the request to send:
// req, or a copy whose body replays what was read of req's.
func (r *Recorder) observe(schema string, req *http.Request) *http.Request {
	if req.Response != nil || r.closed.Load() || !(r.rand() < r.rate) {
		return req // a redirect hop (http.Client sets Response), closed, or not sampled
	}
	body, out, ok := r.readBody(req)
	if !ok {
		r.skipped.Add(1)
		return out
	}
	entry, ok := r.entry(schema, out, body)
	if !ok {
		r.skipped.Add(1)
		return out
	}
	var line bytes.Buffer
	enc := json.NewEncoder(&line)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(entry); err != nil { // cannot happen: the body is valid JSON
		r.skipped.Add(1)
		return out
	}
	if err := r.write(line.Bytes()); err != nil {
		r.skipped.Add(1)
		return out
	}
	r.recorded.Add(1)
	return out
}

// readBody returns req's body, up to MaxBodyBytes, and the request to send
// on. With GetBody, the body is read from a copy and req goes on as it is;
// otherwise what was read is put back in front of the rest, on a shallow
// copy of req, as a RoundTripper must not change its request.
func (r *Recorder) readBody(req *http.Request) (body []byte, out *http.Request, ok bool) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, req, true
	}
	if req.ContentLength > r.maxBody {
		return nil, req, false
	}
	if req.GetBody != nil {
		rc, err := req.GetBody()
		if err != nil {
			return nil, req, false
		}
		defer rc.Close()
		body, err := io.ReadAll(io.LimitReader(rc, r.maxBody+1))
		if err != nil || int64(len(body)) > r.maxBody {
			return nil, req, false
		}
		return body, req, true
	}
	read, err := io.ReadAll(io.LimitReader(req.Body, r.maxBody+1))
	out = req.Clone(req.Context())
	out.Body = replayBody{Reader: io.MultiReader(bytes.NewReader(read), req.Body), Closer: req.Body}
	if err != nil || int64(len(read)) > r.maxBody {
		return nil, out, false
	}
	return read, out, true
}

// replayBody is a request body whose first bytes were read ahead.
type replayBody struct {
	io.Reader
	io.Closer
}

// entry builds the corpus entry of req. A POST with a JSON object or array
// body becomes a Post, replayed to the schema's configured URL; any other
// request keeps its method and path (with the query), replayed with
// Invoker.Do against the schema's URL.
func (r *Recorder) entry(schema string, req *http.Request, body []byte) (Request, bool) {
	trimmed := bytes.TrimSpace(body)
	isJSON := len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') && json.Valid(trimmed)
	if len(trimmed) > 0 && !isJSON {
		return Request{}, false // a corpus body is a JSON object or array
	}
	if !r.mutation && !repeatable(req.Method, trimmed, req.URL) {
		return Request{}, false
	}
	sum := sha256.New()
	sum.Write(r.salt[:])
	sum.Write(trimmed)
	e := Request{
		Name:   fmt.Sprintf("%s/%d-%s", schema, r.seq.Add(1), hex.EncodeToString(sum.Sum(nil)[:4])),
		Schema: schema,
	}
	if isJSON {
		e.Body = json.RawMessage(trimmed)
	}
	if req.Method != http.MethodPost || !isJSON {
		e.Method = req.Method
		if e.Method == "" {
			e.Method = http.MethodGet
		}
		e.Path = req.URL.RequestURI()
	}
	if gw := gateway.Request(req.Context()); gw != nil {
		for _, name := range r.headers {
			values := gw.Header.Values(name)
			if len(values) == 0 {
				continue
			}
			if e.Headers == nil {
				e.Headers = make(map[string]string, len(r.headers))
			}
			if r.redact[name] {
				e.Headers[name] = answer.Redacted
			} else {
				e.Headers[name] = strings.Join(values, ", ")
			}
		}
	}
	return e, true
}

// write appends one line to the corpus, rotating first if the line would
// take the file over MaxFileBytes.
func (r *Recorder) write(line []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.err != nil:
		return r.err
	case r.file == nil:
		return errors.New("compare: recorder: closed")
	}
	if r.maxFile > 0 && r.size > 0 && r.size+int64(len(line)) > r.maxFile {
		if err := r.rotate(); err != nil {
			r.err = err
			return err
		}
	}
	n, err := r.w.Write(line)
	r.size += int64(n)
	if err != nil {
		r.err = fmt.Errorf("compare: recorder: %w", err)
	}
	return r.err
}

// repeatable reports whether replaying a request is safe: it is a query
// by operation.Classify, the one rule the transport sends twice or shares
// by (its method, its URL's parameters and its body).
func repeatable(method string, body []byte, u *url.URL) bool {
	return operation.Classify(method, u.RawQuery, body) == operation.Query
}
