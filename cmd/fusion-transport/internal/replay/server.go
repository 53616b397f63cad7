package replay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"

	"github.com/fusiongo/transport/cmd/fusion-transport/internal/schemas"
	"github.com/fusiongo/transport/internal/testsupport/apqserve"
)

// maxBodyBytes bounds a request body; a larger one cannot have been
// recorded and gets 413.
const maxBodyBytes = 1 << 20

// Options configure Start. The zero value answers without delay.
type Options struct {
	// Latency is a fixed delay before each answer (the benchmark's
	// constant-latency mode). Zero: none. The wait is time.Sleep, which
	// uses the goroutine's own timer and so allocates nothing per request
	// (net/http serves a connection's requests on one goroutine); it does
	// not end early when the client goes away, so Close may wait one
	// Latency.
	Latency time.Duration

	// Learn, if set, answers a body that was not recorded by running the
	// embedded schema once (schemas.Handler) and recording its answer, so
	// that another gateway's requests (graphql-go-tools') are replayed
	// from their second sighting on. Off: such a body gets 404.
	Learn bool

	// APQ is how Start's servers treat automatic persisted queries, as
	// schemas.Options.APQ. By default each schema serves them in front of
	// its replay: a request by its hash runs the text kept under it,
	// replayed by the body the client would have sent with the text.
	APQ apqserve.Mode

	// CacheControl, if not empty, is the Cache-Control header of every
	// answer of the servers Start runs, as in schemas.Options. Empty: none.
	CacheControl string
}

// answer is an Answer with its header values built once, so that writing it
// allocates nothing.
type answer struct {
	status        int
	contentType   []string
	contentLength []string
	body          []byte
}

// Handler answers one source schema's recorded requests. It is safe for
// concurrent use.
type Handler struct {
	schema  string
	answers map[string]*answer
	latency time.Duration
	bufs    sync.Pool // *[]byte request bodies

	learn  http.Handler // the real schema, with Options.Learn
	mu     sync.RWMutex // guards answers when learn is set
	learnt int          // answers learnt, under mu
}

// Learnt counts the answers learnt since NewHandler (Options.Learn).
func (h *Handler) Learnt() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.learnt
}

var _ http.Handler = (*Handler)(nil)

// NewHandler returns the handler of the named schema's recorded answers.
func NewHandler(rec Recording, schema string, opts Options) (*Handler, error) {
	m, ok := rec[schema]
	if !ok {
		return nil, fmt.Errorf("source schema %q: not recorded", schema)
	}
	h := &Handler{schema: schema, answers: make(map[string]*answer, len(m)), latency: opts.Latency}
	for body, a := range m {
		h.answers[body] = &answer{
			status:        a.Status,
			contentType:   []string{a.ContentType},
			contentLength: []string{strconv.Itoa(len(a.Body))},
			body:          a.Body,
		}
	}
	h.bufs.New = func() any { b := make([]byte, 0, 4<<10); return &b }
	if opts.Learn {
		real, err := schemas.Handler(schema, schemas.Options{})
		if err != nil {
			return nil, err
		}
		h.learn = real
	}
	return h, nil
}

// ServeHTTP answers a POST whose body was recorded with its answer; any
// other request with 404 (405 for another method, 413 for a body too large)
// and a GraphQL error naming the schema.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.fail(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed: the replay answers recorded POSTs")
		return
	}
	bp := h.bufs.Get().(*[]byte)
	body, err := readBody((*bp)[:0], r.Body, r.ContentLength)
	h.mu.RLock()
	a, found := h.answers[string(body)] // the conversion does not allocate
	h.mu.RUnlock()
	var excerpt string
	if !found && err == nil && h.learn != nil {
		a, found = h.learnAnswer(body, r)
	}
	if !found && err == nil {
		excerpt = string(body[:min(len(body), 120)])
	}
	*bp = body[:0]
	h.bufs.Put(bp)
	if h.latency > 0 {
		time.Sleep(h.latency)
	}
	switch {
	case errors.Is(err, errTooLarge):
		h.fail(w, http.StatusRequestEntityTooLarge, "request body larger than "+strconv.Itoa(maxBodyBytes)+" bytes: not recorded")
		return
	case err != nil:
		h.fail(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		return
	case !found:
		h.fail(w, http.StatusNotFound, "request not recorded (the replay answers only the benchmark gateway's requests for the deep-recursion query): "+strconv.Quote(excerpt))
		return
	}
	hdr := w.Header()
	hdr["Content-Type"] = a.contentType
	hdr["Content-Length"] = a.contentLength
	hdr["Date"] = nil
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}

// learnAnswer runs the real schema on body, records its answer and returns
// it.
func (h *Handler) learnAnswer(body []byte, r *http.Request) (*answer, bool) {
	key := string(body)
	rec := httptest.NewRecorder()
	req := r.Clone(r.Context())
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	h.learn.ServeHTTP(rec, req)
	a := &answer{
		status:        rec.Code,
		contentType:   []string{rec.Header().Get("Content-Type")},
		contentLength: []string{strconv.Itoa(rec.Body.Len())},
		body:          bytes.Clone(rec.Body.Bytes()),
	}
	h.mu.Lock()
	if old, ok := h.answers[key]; ok {
		a = old // another request learnt it first: the same bytes
	} else {
		h.answers[key] = a
		h.learnt++
	}
	h.mu.Unlock()
	return a, true
}

func (h *Handler) fail(w http.ResponseWriter, status int, msg string) {
	body := `{"errors":[{"message":` + strconv.Quote("replay of source schema "+strconv.Quote(h.schema)+": "+msg) + `}]}`
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

var errTooLarge = errors.New("request body too large")

// readBody appends r's content to buf, growing it at most once when the
// length is known.
func readBody(buf []byte, r io.Reader, length int64) ([]byte, error) {
	if length > maxBodyBytes {
		return buf, errTooLarge
	}
	if length > 0 && int(length) > cap(buf) {
		buf = make([]byte, 0, length)
	}
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= maxBodyBytes {
				return buf, errTooLarge
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// Servers are the replayed schemas listening on loopback.
type Servers struct {
	// URLs maps each schema name to its endpoint, as schemas.Servers does.
	URLs map[string]string

	servers   []*http.Server
	handlers  map[string]*Handler
	persisted map[string]*apqserve.Handler // immutable after Start: each schema's APQ; empty with apqserve.Off
	serving   sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
}

// Start serves every recorded schema of schemas.Names on its own
// 127.0.0.1:0 listener at schemas.Path, with the count of its requests at
// schemas.CallsPath (schemas.Mount). Close them with Close.
func Start(rec Recording, opts Options) (*Servers, error) {
	s := &Servers{URLs: make(map[string]string, len(schemas.Names)), handlers: map[string]*Handler{}, persisted: map[string]*apqserve.Handler{}}
	for _, name := range schemas.Names {
		h, err := NewHandler(rec, name, opts)
		if err != nil {
			return nil, errors.Join(err, s.Close())
		}
		s.handlers[name] = h
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, errors.Join(fmt.Errorf("source schema %q: listen: %w", name, err), s.Close())
		}
		mux := http.NewServeMux()
		var handler http.Handler = h
		if opts.APQ != apqserve.Off {
			s.persisted[name] = apqserve.New(h, apqserve.Options{Mode: opts.APQ})
			handler = s.persisted[name]
		}
		schemas.Mount(mux, handler, opts.CacheControl)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		s.servers = append(s.servers, srv)
		s.URLs[name] = "http://" + ln.Addr().String() + schemas.Path
		s.serving.Go(func() { _ = srv.Serve(ln) })
	}
	return s, nil
}

// Learnt counts the answers learnt by every schema (Options.Learn).
func (s *Servers) Learnt() int {
	n := 0
	for _, h := range s.handlers {
		n += h.Learnt()
	}
	return n
}

// PersistedQueryStats returns what each schema did with persisted queries
// so far (the requests answered by hash, refused as not found, ...); nil
// with apqserve.Off.
func (s *Servers) PersistedQueryStats() map[string]apqserve.Stats {
	return apqserve.StatsOf(s.persisted)
}

// Close stops the servers, closing listeners and connections at once, and
// waits for them to end.
func (s *Servers) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		for _, srv := range s.servers {
			errs = append(errs, srv.Close())
		}
		s.serving.Wait()
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}
