package middleware

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/fusiongo/transport/internal/defaults"
	"github.com/fusiongo/transport/operation"
)

// The codecs of CompressConfig.Codec.
const (
	CodecGzip = defaults.CodecGzip // "gzip"
	CodecZstd = defaults.CodecZstd // "zstd"
)

// DefaultCompressMinBytes is CompressConfig.MinBytes's default: 1024.
const DefaultCompressMinBytes = defaults.CompressMinBytes

// CompressConfig configures Compress. Read once, by Compress.
type CompressConfig struct {
	// Codec is CodecGzip or CodecZstd; any other value compresses nothing
	// (Compress returns a middleware that passes requests on as they are).
	Codec string

	// MinBytes is the smallest body compressed. Zero or negative:
	// DefaultCompressMinBytes.
	MinBytes int

	// OnCompressed, if set, is called for each call whose body went
	// compressed, once the call returned, with the body's length before
	// and after; not for a call refused unsent further in (a breaker, a
	// rate limit, max_pending_requests). It runs on the request's
	// goroutine, with the request's context, and must not block.
	OnCompressed func(ctx context.Context, raw, sent int)
}

// UnreadBytes is implemented by a request body that can hand its bytes over
// without being read, as the root package's Post body does: Compress
// encodes them where they lie, and Retry, Hedge and Dedupe tell the
// operation from them (when the request also has GetBody), with no copy.
// The slice must not change while the request is in flight.
type UnreadBytes interface {
	UnreadBytes() []byte
}

// Compress returns the middleware that sends a request body of at least
// cfg.MinBytes bytes compressed with cfg.Codec, with Content-Encoding
// naming it and Content-Length the compressed length. It leaves alone a
// GET or HEAD, a request without a body, one that has a Content-Encoding
// already (the caller encoded it), a body the encoding would not make
// smaller, and a body it would have to read that is over
// operation.MaxBodyBytes, 1 MiB (which goes
// as it is, unbuffered). The request's GetBody returns the compressed
// bytes, so a retry, a hedge or a resend after a dead connection sends the
// same bytes without compressing again; Retry, Hedge and Dedupe further in
// still read the operation kind from the uncompressed body.
//
// Encoders are pooled (gzip.Writer, reset per body) or shared (one
// zstd.Encoder, whose EncodeAll is safe for concurrent use); the
// compressed bytes are copied out of a pooled scratch buffer into one
// allocation of their own length, which the request keeps: a hedge that
// lost, or an HTTP/2 stream, may still be writing them after the response
// went back, so they are never pooled.
func Compress(cfg CompressConfig) Middleware {
	var enc encoder
	switch cfg.Codec {
	case CodecGzip:
		enc = gzipEncoder{}
	case CodecZstd:
		enc = zstdEncoder{}
	default:
		return func(next http.RoundTripper) http.RoundTripper { return next }
	}
	if cfg.MinBytes <= 0 {
		cfg.MinBytes = DefaultCompressMinBytes
	}
	return func(next http.RoundTripper) http.RoundTripper {
		return &compressor{wrapped: wrap(next), cfg: cfg, enc: enc}
	}
}

// compressor is the RoundTripper of Compress.
type compressor struct {
	wrapped
	cfg CompressConfig
	enc encoder
}

var _ http.RoundTripper = (*compressor)(nil)

func (c *compressor) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Body == http.NoBody || req.Method == http.MethodGet || req.Method == http.MethodHead ||
		req.Header.Get("Content-Encoding") != "" || (req.ContentLength > 0 && req.ContentLength < int64(c.cfg.MinBytes)) {
		return c.next.RoundTrip(req)
	}
	send := req
	var raw []byte
	var memo kindMemo
	switch b := req.Body.(type) {
	case UnreadBytes:
		raw = b.UnreadBytes()
		memo, _ = b.(kindMemo)
	default:
		cl, err := classify(req) // reads at most operation.MaxBodyBytes
		if err != nil {
			return nil, err
		}
		if cl.body == nil {
			return c.next.RoundTrip(cl.req) // too large to buffer
		}
		send, raw = cl.req, cl.body
	}
	if len(raw) < c.cfg.MinBytes {
		return c.next.RoundTrip(send)
	}
	encoded := c.enc.encode(raw)
	if encoded == nil || len(encoded) >= len(raw) {
		return c.next.RoundTrip(send)
	}
	// The request sent and its body in one allocation.
	call := &encodedCall{req: *send, body: encodedBody{raw: raw, sent: encoded}}
	if memo != nil {
		// The body told its kind (a Post's, once classified; a persisted
		// query's, whose bytes cannot tell it): the compressed one
		// carries it on.
		call.body.known, call.body.kindSet = memo.OperationKind()
	}
	out := &call.req
	out.Header = send.Header.Clone()
	if out.Header == nil {
		out.Header = http.Header{}
	}
	// A shared value, never written: Header.Set would allocate it anew.
	out.Header["Content-Encoding"] = c.enc.contentEncoding()
	call.body.r.Reset(encoded)
	out.Body = &call.body
	out.GetBody = call.body.again
	out.ContentLength = int64(len(encoded))
	if send == req {
		// The caller's body was read through GetBody, or not at all: it
		// is not sent, so it is closed now, as a RoundTripper must.
		// (classify closed a body it read itself.)
		closeBody(req)
	}
	resp, err := c.next.RoundTrip(out)
	if c.cfg.OnCompressed != nil && !refusedUnsent(err) {
		c.cfg.OnCompressed(req.Context(), len(raw), len(encoded))
	}
	return resp, err
}

// encodedCall is what Compress allocates for one call besides the header,
// the compressed bytes and GetBody: the request it sends and its body.
type encodedCall struct {
	req  http.Request
	body encodedBody
}

// encodedBody is a compressed request body. It keeps the uncompressed
// bytes for classify, which reads the operation kind from them, or the
// kind the uncompressed body told (kindMemo).
type encodedBody struct {
	r       bytes.Reader
	raw     []byte         // uncompressed; never written
	sent    []byte         // compressed; never written
	known   operation.Kind // the kind the uncompressed body told, if kindSet
	kindSet bool
}

// kind is the operation kind of the request req that carries b.
func (b *encodedBody) kind(req *http.Request) operation.Kind {
	if b.kindSet {
		return b.known
	}
	return kindOf(req, b.raw)
}

func (b *encodedBody) Read(p []byte) (int, error)         { return b.r.Read(p) }
func (b *encodedBody) WriteTo(w io.Writer) (int64, error) { return b.r.WriteTo(w) }
func (b *encodedBody) Close() error                       { return nil }

// again is the request's GetBody: the same compressed bytes, from the
// start.
func (b *encodedBody) again() (io.ReadCloser, error) {
	n := &encodedBody{raw: b.raw, sent: b.sent, known: b.known, kindSet: b.kindSet}
	n.r.Reset(b.sent)
	return n, nil
}

// encoder compresses a whole body into a new slice of its own length, or
// returns nil if it cannot (the body then goes as it is).
type encoder interface {
	encode(raw []byte) []byte
	// contentEncoding is the Content-Encoding header's value, shared by
	// every request: no one may write it.
	contentEncoding() []string
}

var (
	gzipValue = []string{CodecGzip}
	zstdValue = []string{CodecZstd}
)

func (gzipEncoder) contentEncoding() []string { return gzipValue }
func (zstdEncoder) contentEncoding() []string { return zstdValue }

// scratch holds the pooled buffers that encoders write into before the
// bytes are copied out.
var scratch = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledScratch bounds the buffers put back in scratch, so that one
// huge body does not keep its buffer alive in the pool.
const maxPooledScratch = 1 << 20

func putScratch(b *bytes.Buffer) {
	if b.Cap() <= maxPooledScratch {
		b.Reset()
		scratch.Put(b)
	}
}

type gzipEncoder struct{}

var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.DefaultCompression)
	return w
}}

func (gzipEncoder) encode(raw []byte) []byte {
	buf := scratch.Get().(*bytes.Buffer)
	defer putScratch(buf)
	w := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(w)
	w.Reset(buf)
	if _, err := w.Write(raw); err != nil {
		return nil // writing to a bytes.Buffer does not fail
	}
	if err := w.Close(); err != nil {
		return nil
	}
	return bytes.Clone(buf.Bytes())
}

type zstdEncoder struct{}

// sharedZstd is the one zstd encoder: EncodeAll is safe for concurrent
// use, and it keeps its own pool of block encoders.
var sharedZstd = sync.OnceValue(func() *zstd.Encoder {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		return nil // fixed options: does not fail
	}
	return e
})

func (zstdEncoder) encode(raw []byte) []byte {
	e := sharedZstd()
	if e == nil {
		return nil
	}
	buf := scratch.Get().(*bytes.Buffer)
	defer putScratch(buf)
	buf.Grow(len(raw)/2 + 64)
	dst := e.EncodeAll(raw, buf.Bytes()[:0])
	out := bytes.Clone(dst)
	if cap(dst) > buf.Cap() {
		// EncodeAll outgrew the buffer: keep the larger one for next time.
		*buf = *bytes.NewBuffer(dst[:0])
	}
	return out
}
