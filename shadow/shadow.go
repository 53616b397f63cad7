// Package shadow compares the sockets path with the legacy path on real
// traffic before the sockets path serves it, as GitHub's Scientist runs a
// candidate beside the control: the primary (legacy) serves every request
// unchanged, and for a sample of queries the same request also goes through
// the candidate (sockets); the two answers are compared by a Comparer (by
// default one of the standard library only; package compare's
// ShadowComparer adds its rules), and mismatches are published. The two
// paths are answer.Senders, and a Comparer compares two answer.Answers into
// answer.Differences: package answer's types, which package compare uses
// too, so a mismatch carries the very values (and JSON form) that compare
// reports.
//
// Guarantees:
//   - the caller gets the primary's response, byte for byte, and never waits
//     for the candidate;
//   - only queries are shadowed: a mutation, a subscription, or an operation
//     whose kind cannot be told is never sent twice;
//   - at most MaxConcurrent comparisons run at once, each keeping at most
//     MaxBodyBytes of each answer; what does not fit is dropped and counted;
//   - sensitive headers are redacted in what is published.
//
// transport.New builds a Shadow when FUSION_SOCKETS_TRANSPORT=shadow (or
// shadow:RATE).
package shadow

import (
	"bytes"
	"context"
	"github.com/fusiongo/transport/internal/respcache"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fusiongo/transport/answer"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/answerdiff"
	"github.com/fusiongo/transport/operation"
)

// Options configure a Shadow. Rate must be set: the zero value shadows
// nothing, as env.ShadowSettings' zero Rate turns shadowing off; the other
// fields' zero values are the defaults below.
type Options struct {
	// Rate is the share of queries shadowed, in (0, 1]: 1 shadows every
	// query (env.DefaultShadowRate, the rate of a bare
	// FUSION_SOCKETS_TRANSPORT=shadow). Zero or negative: none, the
	// meaning zero has in env.ShadowSettings.Rate; more than 1 counts as 1.
	Rate float64
	// MaxConcurrent bounds the comparisons in flight. Zero:
	// env.DefaultShadowMaxConcurrent (4).
	MaxConcurrent int
	// MaxBodyBytes bounds each answer kept for a comparison. Zero:
	// env.DefaultShadowMaxBodyBytes (1 MiB).
	MaxBodyBytes int64
	// Timeout bounds the candidate's request, and the wait for the caller
	// to finish reading the primary's body. Zero: env.DefaultShadowTimeout
	// (10s).
	Timeout time.Duration
	// Comparer compares the two answers of a shadowed query. Nil: the
	// default Comparer (see Comparer), which compares errors, redirects,
	// status, headers (without Date and hop-by-hop ones) and bodies (JSON
	// as JSON), as package compare does with the zero compare.Rules.
	Comparer Comparer
	// Publisher receives mismatches and counts. Nil: a LogPublisher on
	// slog.Default(). (transport.New adds the counters of the telemetry
	// that transport.WithTelemetry gives, with shadow.Multi.)
	Publisher Publisher
	// Rand returns a number in [0, 1) for sampling. Nil: math/rand/v2.
	Rand func() float64
}

// Shadow is an Invoker that serves from the primary and compares a sample
// of queries with the candidate. It is safe for concurrent use.
type Shadow struct {
	primary, candidate answer.Sender
	o                  Options
	slots              chan struct{}
	wg                 sync.WaitGroup
	stats              counters
}

// New returns a Shadow of primary and candidate. Close closes both.
func New(primary, candidate answer.Sender, o Options) *Shadow {
	if o.Rate > 1 {
		o.Rate = 1
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = env.DefaultShadowMaxConcurrent
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = env.DefaultShadowMaxBodyBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = env.DefaultShadowTimeout
	}
	if o.Publisher == nil {
		o.Publisher = LogPublisher{Logger: slog.Default()}
	}
	if o.Comparer == nil {
		o.Comparer = defaultComparer{}
	}
	if o.Rand == nil {
		o.Rand = rand.Float64
	}
	return &Shadow{primary: primary, candidate: candidate, o: o, slots: make(chan struct{}, o.MaxConcurrent)}
}

// Post serves body from the primary and, for a sampled query, also sends
// it through the candidate and compares.
func (s *Shadow) Post(ctx context.Context, schema string, body []byte) (*http.Response, error) {
	if !s.take(ctx, schema, http.MethodPost, "", body) {
		return s.primary.Post(ctx, schema, body)
	}
	// Both sides of a sampled query are really sent: neither answers
	// from a response cache, or the comparison would compare the cache.
	ctx = respcache.WithoutCache(ctx)
	copied := bytes.Clone(body) // the caller may reuse body once its answer arrived
	cand := s.startCandidate(ctx, schema, func(cctx context.Context) (*http.Response, error) {
		return s.candidate.Post(cctx, schema, copied)
	})
	start := time.Now()
	resp, err := s.primary.Post(ctx, schema, body)
	return s.finishPrimary(schema, resp, err, start, cand), err
}

// Do serves req from the primary. A POST whose body can be read again
// (GetBody) and holds a query is shadowed like Post; any other request
// only goes to the primary.
func (s *Shadow) Do(ctx context.Context, schema string, req *http.Request) (*http.Response, error) {
	body, ok := replayableBody(req, s.o.MaxBodyBytes)
	if !ok || !s.take(ctx, schema, req.Method, req.URL.RawQuery, body) {
		return s.primary.Do(ctx, schema, req)
	}
	ctx = respcache.WithoutCache(ctx) // as in Post
	cand := s.startCandidate(ctx, schema, func(cctx context.Context) (*http.Response, error) {
		r := req.Clone(cctx)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		return s.candidate.Do(cctx, schema, r)
	})
	start := time.Now()
	resp, err := s.primary.Do(ctx, schema, req)
	return s.finishPrimary(schema, resp, err, start, cand), err
}

// take decides whether to shadow: a sampled query (operation.Classify of
// method, rawQuery and body) that fits, with a free comparison slot. It
// takes the slot. ctx is the request's.
func (s *Shadow) take(ctx context.Context, schema, method, rawQuery string, body []byte) bool {
	if s.o.Rand() >= s.o.Rate {
		return false
	}
	if operation.Classify(method, rawQuery, body) != operation.Query {
		s.stats.notQuery.Add(1)
		return false
	}
	if int64(len(body)) > s.o.MaxBodyBytes {
		s.drop(ctx, schema, DropTooLarge)
		return false
	}
	select {
	case s.slots <- struct{}{}:
		s.stats.sampled.Add(1)
		return true
	default:
		s.drop(ctx, schema, DropBusy)
		return false
	}
}

// drop counts a sampled query not compared, for reason; ctx is the
// request's (for the Publisher, which ignores its cancellation).
func (s *Shadow) drop(ctx context.Context, schema string, reason string) {
	s.stats.dropped.Add(1)
	s.o.Publisher.Dropped(ctx, schema, reason)
}

// startCandidate sends the candidate's request on its own goroutine, with
// a context detached from the caller's cancellation (the caller must not
// wait for it, nor cut it short) that keeps the caller's values, so the
// gateway request's headers are forwarded alike. It returns where the
// primary's answer goes.
func (s *Shadow) startCandidate(ctx context.Context, schema string, send func(context.Context) (*http.Response, error)) chan<- answer.Answer {
	primary := make(chan answer.Answer, 1)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { <-s.slots }()
		detached := context.WithoutCancel(ctx) // what the Publisher gets
		cctx, cancel := context.WithTimeout(detached, s.o.Timeout)
		defer cancel()
		start := time.Now()
		resp, err := send(cctx)
		cand := answerdiff.Capture(resp, err, time.Since(start), s.o.MaxBodyBytes)
		var prim answer.Answer
		select {
		case prim = <-primary:
		case <-cctx.Done():
			s.drop(detached, schema, DropPrimaryUnread)
			return
		}
		switch {
		case prim.Err == errUnread:
			s.drop(detached, schema, DropPrimaryUnread)
			return
		case prim.Truncated || cand.Truncated:
			s.drop(detached, schema, DropTooLarge)
			return
		}
		s.stats.compared.Add(1)
		diffs := s.o.Comparer.Compare(schema, prim, cand)
		if len(diffs) > 0 {
			s.stats.mismatched.Add(1)
			s.o.Publisher.Publish(detached, Mismatch{Schema: schema, Differences: diffs, PrimaryStatus: prim.Status, CandidateStatus: cand.Status})
		}
		s.o.Publisher.Compared(detached, schema, len(diffs) == 0)
	}()
	return primary
}

// finishPrimary hands the caller the primary's response, with a body that
// copies what the caller reads (up to MaxBodyBytes) for the comparison, and
// sends the primary's answer to out.
func (s *Shadow) finishPrimary(schema string, resp *http.Response, err error, start time.Time, out chan<- answer.Answer) *http.Response {
	if err != nil {
		out <- answerdiff.Capture(nil, err, time.Since(start), s.o.MaxBodyBytes)
		return nil
	}
	resp.Body = &teeBody{rc: resp.Body, resp: resp, start: start, max: s.o.MaxBodyBytes, out: out}
	return resp
}

// errUnread marks a primary answer whose body the caller closed before the
// end: there is nothing whole to compare.
const errUnread = "shadow: the caller did not read the primary's body to the end"

// teeBody is the caller's body: it reads through, and keeps a copy of up to
// max bytes; at the end (EOF or Close) it sends the primary's answer.
type teeBody struct {
	rc    io.ReadCloser
	resp  *http.Response
	start time.Time
	max   int64
	buf   bytes.Buffer
	over  bool
	eof   bool
	once  sync.Once
	out   chan<- answer.Answer
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	if n > 0 && !t.over {
		if int64(t.buf.Len()+n) > t.max {
			t.over = true
		} else {
			t.buf.Write(p[:n])
		}
	}
	if err == io.EOF {
		t.eof = true
		t.send()
	}
	return n, err
}

func (t *teeBody) Close() error {
	err := t.rc.Close()
	t.send()
	return err
}

func (t *teeBody) send() {
	t.once.Do(func() {
		a := answerdiff.Capture(&http.Response{
			StatusCode:   t.resp.StatusCode,
			Header:       t.resp.Header,
			Body:         io.NopCloser(bytes.NewReader(t.buf.Bytes())),
			Uncompressed: t.resp.Uncompressed,
			Request:      t.resp.Request,
		}, nil, time.Since(t.start), t.max)
		a.Truncated = a.Truncated || t.over
		if !t.eof {
			a.Err = errUnread
		}
		t.out <- a
	})
}

// replayableBody reads a POST body that can be read again, up to max.
func replayableBody(req *http.Request, max int64) ([]byte, bool) {
	if req == nil || req.Method != http.MethodPost || req.GetBody == nil {
		return nil, false
	}
	rc, err := req.GetBody()
	if err != nil {
		return nil, false
	}
	defer rc.Close()
	body, err := io.ReadAll(io.LimitReader(rc, max+1))
	if err != nil || int64(len(body)) > max {
		return nil, false
	}
	return body, true
}

// Close waits for the comparisons in flight, each bounded by Timeout. The
// caller owns primary and candidate and closes them after.
func (s *Shadow) Close() {
	s.wg.Wait()
}

// Stats are a Shadow's counts since New.
type Stats struct {
	// Sampled queries got a comparison slot; Compared ones were compared;
	// Mismatched ones differed; Dropped ones could not be compared (busy,
	// too large, primary body unread); NotQuery counts sampled requests
	// that were not shadowed because they were not queries.
	Sampled, Compared, Mismatched, Dropped, NotQuery uint64
}

type counters struct {
	sampled, compared, mismatched, dropped, notQuery atomic.Uint64
}

// Stats returns the counts so far.
func (s *Shadow) Stats() Stats {
	return Stats{
		Sampled:    s.stats.sampled.Load(),
		Compared:   s.stats.compared.Load(),
		Mismatched: s.stats.mismatched.Load(),
		Dropped:    s.stats.dropped.Load(),
		NotQuery:   s.stats.notQuery.Load(),
	}
}
