package compare

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/fusiongo/transport/internal/respcache"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/fusiongo/transport/answer"
	"github.com/fusiongo/transport/internal/answerdiff"
	"github.com/fusiongo/transport/internal/gateway"
	"github.com/fusiongo/transport/internal/redact"
)

// GatewayURL is the URL of the gateway request that Run puts in the context
// of every source schema request (transport.WithGatewayRequest). Invokers
// only read its headers; the URL never goes on the wire.
const GatewayURL = "http://gateway.local/graphql"

// Defaults of Options.
const (
	DefaultTimeout      = 30 * time.Second
	DefaultMaxBodyBytes = 16 << 20
	DefaultMaxPaths     = 20
)

// Side is one Invoker under comparison.
type Side struct {
	// Name names the side in the report and in every explanation, e.g.
	// "legacy". Required; the two sides of a run have different names.
	Name string

	// Invoker sends the side's requests (a transport.Invoker). Required.
	// Run does not close it.
	Invoker answer.Sender
}

// Options configures Run. The zero value works for a corpus of Post
// requests.
type Options struct {
	// URLs maps a source schema name to its URL, as configured in both
	// Invokers. Do requests with a relative Path need their schema's URL to
	// resolve against; with a Post's schema here, a redirect is also
	// detected when an Invoker does not record the redirect chain. Nil
	// means no URLs are known.
	URLs map[string]string

	// Concurrency is how many corpus requests are in flight at once. The
	// two sides of one request are always sent one after the other. Zero
	// or negative means 1.
	Concurrency int

	// Timeout bounds one side of one request, from sending to reading the
	// last byte of the body. Zero means DefaultTimeout; negative means no
	// timeout (Run's context still applies).
	Timeout time.Duration

	// MaxBodyBytes caps how much of a response body is read and kept, and
	// how far a gzip body is decoded; a longer body is cut there and the
	// result notes it. Zero or negative means DefaultMaxBodyBytes.
	MaxBodyBytes int64

	// MaxPaths caps how many differing JSON paths a result lists; the rest
	// are counted in one more answer.Difference. Zero or negative means
	// DefaultMaxPaths.
	MaxPaths int

	// Rules say what the comparison leaves out, how each source schema's
	// bodies compare, which header values are redacted and whether timing
	// counts. The zero value: see Rules.
	Rules Rules

	// Cached lets the sides answer from their response caches. Off (the
	// default), every request is really sent on both sides: a transport's
	// response cache neither answers nor stores (transport's
	// response_cache), so that what is compared is the paths. On, a side
	// whose cache holds an answer gives it: the way to prove that a cache
	// changes no answer (a side with the cache against one without, the
	// corpus run twice so that the second run is answered from the cache);
	// the Age header a cached answer carries is then not compared.
	Cached bool

	// Progress, if not nil, is called after each request has been
	// compared, with the number compared so far and the corpus size. Calls
	// come from Run's workers, one at a time, done increasing by one each
	// time; a slow Progress slows the run. Nil: no calls.
	Progress func(done, total int)
}

func (o *Options) concurrency() int { return max(o.Concurrency, 1) }

func (o *Options) timeout() time.Duration {
	if o.Timeout == 0 {
		return DefaultTimeout
	}
	return o.Timeout
}

func (o *Options) maxBodyBytes() int64 {
	if o.MaxBodyBytes <= 0 {
		return DefaultMaxBodyBytes
	}
	return o.MaxBodyBytes
}

func (o *Options) maxPaths() int {
	if o.MaxPaths <= 0 {
		return DefaultMaxPaths
	}
	return o.MaxPaths
}

// Run sends every request of corpus through side a, then through side b,
// and compares the two answers. Requests run concurrently across the corpus
// (Options.Concurrency); the results are in corpus order. Run checks the
// sides, the corpus, the URLs and the rules before it sends anything. If ctx ends
// before every request has been answered, Run returns ctx's error and no
// report, because requests cut short would look alike on both sides.
//
// Each request is made with a context carrying a gateway request to
// GatewayURL with the Request's Headers (transport.WithGatewayRequest); a
// Post goes through Invoker.Post, a request with Method and Path through
// Invoker.Do. The answers are compared in this order:
//
//   - Errors: if exactly one side fails (including failing to read the
//     body), that is the one difference. If both fail, the request counts
//     as identical and the result notes both messages: they name different
//     internals, so they are not compared.
//   - Redirects: if exactly one side followed a redirect, or the two ended
//     at different URLs, that is the one difference: the answers are to
//     different requests, so nothing else is compared.
//   - Status codes.
//   - Headers, canonicalised, leaving out Date, the hop-by-hop headers
//     (those a Connection header names, Connection, Keep-Alive,
//     Proxy-Connection, Proxy-Authenticate, Proxy-Authorization, TE,
//     Trailer, Transfer-Encoding, Upgrade) and Rules.IgnoreHeaders, and
//     leaving out Content-Length when either side decompressed its body
//     transparently or when the bodies differ as bytes (a body
//     difference says more, and bodies equal under the rules make none).
//     When one side decompressed transparently and the other returned the
//     body encoded, that is one header difference on Content-Encoding.
//     The values of sensitive headers (Rules.Redact) are compared but
//     published as answer.Redacted.
//   - Bodies, after decoding gzip bodies: with the source schema's
//     Rules.Comparators entry if it has one; else as JSON values if both
//     are JSON (numbers compare by their exact text, object keys in any
//     order, Rules.IgnorePaths left out), one difference per differing
//     JSON path; otherwise as bytes.
//   - Timing, if Rules.TimingRatio is set.
//
// The headers that the Report keeps of each side have their sensitive
// values answer.Redacted too.
func Run(ctx context.Context, corpus []Request, a, b Side, opts Options) (*Report, error) {
	if err := validateSides(a, b); err != nil {
		return nil, err
	}
	if err := validateCorpus(corpus); err != nil {
		return nil, err
	}
	targets, err := resolveTargets(corpus, opts.URLs)
	if err != nil {
		return nil, err
	}
	rules := opts.Rules
	if err := rules.Validate(); err != nil {
		return nil, fmt.Errorf("compare: rules: %w", err)
	}

	if opts.Cached {
		// An answer from a cache says how old it is; the side that sent
		// its request has no Age. That is the cache, not a difference.
		rules.IgnoreHeaders = append(slices.Clip(rules.IgnoreHeaders), "Age")
	}
	c := newComparer(a.Name, b.Name, &rules, opts.maxBodyBytes(), opts.maxPaths())
	results := make([]Result, len(corpus))
	var (
		progressMu sync.Mutex
		done       int
	)
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(opts.concurrency(), len(corpus)) {
		wg.Go(func() {
			for i := range jobs {
				req := &corpus[i]
				x := send(ctx, a.Invoker, req, targets[i], &opts)
				y := send(ctx, b.Invoker, req, targets[i], &opts)
				res := c.result(req.Name, req.Schema, x, y)
				res.A.Header = answerdiff.RedactHeader(res.A.Header, c.redact)
				res.B.Header = answerdiff.RedactHeader(res.B.Header, c.redact)
				results[i] = res
				if opts.Progress != nil {
					progressMu.Lock()
					done++
					opts.Progress(done, len(corpus))
					progressMu.Unlock()
				}
			}
		})
	}
feed:
	for i := range corpus {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("compare: run stopped: %w", err)
	}
	return &Report{A: a.Name, B: b.Name, Results: results}, nil
}

func validateSides(a, b Side) error {
	for _, s := range []Side{a, b} {
		if s.Name == "" {
			return errors.New("compare: a side has no name")
		}
		if s.Invoker == nil {
			return fmt.Errorf("compare: side %q has no Invoker", s.Name)
		}
	}
	if a.Name == b.Name {
		return fmt.Errorf("compare: both sides are named %q", a.Name)
	}
	return nil
}

// resolveTargets returns, per corpus entry, the URL the request is sent to:
// the resolved Path of a Do request, the schema's URL of a Post if known,
// else nil.
func resolveTargets(corpus []Request, urls map[string]string) ([]*url.URL, error) {
	bases := make(map[string]*url.URL, len(urls))
	for schema, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("compare: source schema %q: URL %q is not absolute (scheme and host)", schema, redact.URL(raw))
		}
		bases[schema] = u
	}
	targets := make([]*url.URL, len(corpus))
	for i := range corpus {
		req := &corpus[i]
		base := bases[req.Schema]
		if !req.isDo() {
			targets[i] = base
			continue
		}
		ref, err := url.Parse(req.Path) // checked by validate
		if err != nil {
			return nil, fmt.Errorf("compare: request %q: %w", req.Name, err)
		}
		if ref.Scheme != "" && ref.Host != "" {
			targets[i] = ref
			continue
		}
		if base == nil {
			return nil, fmt.Errorf("compare: request %q: path %q is relative and Options.URLs has no URL for source schema %q", req.Name, req.Path, req.Schema)
		}
		targets[i] = base.ResolveReference(ref)
	}
	return targets, nil
}

// send makes one side of one request and reads its answer. Failures become
// answer.Answer.Err: they are part of what is compared.
func send(ctx context.Context, inv answer.Sender, req *Request, target *url.URL, opts *Options) answer.Answer {
	var out answer.Answer
	if target != nil {
		out.URL = target.Redacted()
	}
	if d := opts.timeout(); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	gw, err := http.NewRequestWithContext(ctx, http.MethodPost, GatewayURL, nil)
	if err != nil {
		out.Err = err.Error()
		return out
	}
	for name, value := range req.Headers {
		gw.Header.Set(name, value)
	}
	ctx = gateway.WithRequest(ctx, gw) // as transport.WithGatewayRequest does
	if !opts.Cached {
		// Both sides are really sent: neither answers from a response cache.
		ctx = respcache.WithoutCache(ctx)
	}

	var (
		resp  *http.Response
		start = time.Now()
	)
	if req.isDo() {
		var body io.Reader
		if len(req.Body) > 0 {
			body = bytes.NewReader(req.Body) // lets the client replay it on a 307 or 308
		}
		// Not :=, which would hide Do's error from Capture below.
		var hr *http.Request
		if hr, err = http.NewRequestWithContext(ctx, req.Method, target.String(), body); err != nil {
			out.Err = err.Error()
			return out
		}
		if body != nil {
			hr.Header.Set("Content-Type", "application/json; charset=utf-8")
		}
		resp, err = inv.Do(ctx, req.Schema, hr)
	} else {
		resp, err = inv.Post(ctx, req.Schema, req.Body)
	}
	captured := Capture(resp, err, time.Since(start), opts.maxBodyBytes())
	if out.URL != "" {
		captured.URL = out.URL
	}
	return captured
}
