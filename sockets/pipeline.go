package sockets

import (
	"compress/gzip"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/hooks"
	"github.com/fusiongo/transport/middleware"
	"github.com/klauspost/compress/zstd"
)

// pipeline builds a source schema's RoundTripper, outermost first:
// telemetry and the request log (when configured), the global middleware, the schema's middleware, dedupe and retry (when
// configured), decompression (when configured), then the schema's
// RoundTripper hook or its pool.
func pipeline(s *schema, settings env.Settings, hk hooks.Schema, global []hooks.Middleware, log *slog.Logger) http.RoundTripper {
	var core http.RoundTripper = poolRoundTripper{s}
	if hk.RoundTripper != nil {
		core = hk.RoundTripper
	}
	var traced []hooks.Middleware
	if s.inv != nil && s.inv.opts.Telemetry != nil {
		traced = append(traced, s.inv.opts.Telemetry.Middleware(s.name, "sockets"))
	}
	if s.inv != nil && s.inv.opts.RequestLog != nil {
		traced = append(traced, middleware.Logging(s.inv.opts.RequestLog, s.name))
	}
	mws := slices.Concat(traced, global, hk.Middleware, hooks.Builtins(settings, s.name, log, s.rules.Added()))
	if len(settings.Decompression) > 0 {
		mws = append(mws, decompress(settings.Decompression))
	}
	return hooks.Chain(core, mws...)
}

// bare reports whether s sends straight on its pool, through no middleware.
func (s *schema) bare() bool {
	return s.rt == http.RoundTripper(poolRoundTripper{s})
}

// poolRoundTripper sends on the schema's pool, following the schema to its
// current pool when a reload drained the one it started on.
type poolRoundTripper struct{ s *schema }

func (p poolRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	return p.s.inv.send(p.s.name, p.s, req)
}

// decompress asks for the listed codings (unless the request names its
// own Accept-Encoding) and decodes a response that uses one of them, as
// net/http's transparent gzip does: Content-Encoding and Content-Length
// are removed and Response.Uncompressed is set.
func decompress(codings []string) hooks.Middleware {
	acceptEncoding := []string{strings.Join(codings, ", ")}
	return func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			asked := false
			if _, ok := req.Header["Accept-Encoding"]; !ok {
				r2 := new(http.Request)
				*r2 = *req
				r2.Header = req.Header.Clone()
				r2.Header["Accept-Encoding"] = acceptEncoding
				req, asked = r2, true
			}
			resp, err := next.RoundTrip(req)
			if err != nil || !asked {
				return resp, err
			}
			coding := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding")))
			if !slices.Contains(codings, coding) || req.Method == http.MethodHead || resp.StatusCode == http.StatusNoContent {
				return resp, nil
			}
			resp.Body = &decodingBody{raw: resp.Body, coding: coding}
			resp.Header.Del("Content-Encoding")
			resp.Header.Del("Content-Length")
			resp.ContentLength = -1
			resp.Uncompressed = true
			return resp, nil
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// decodingBody decodes lazily, on the first Read, so that a caller that
// only closes the body pays nothing.
type decodingBody struct {
	raw     io.ReadCloser
	coding  string
	decoder io.Reader
	zr      *zstd.Decoder
	err     error
}

func (b *decodingBody) Read(p []byte) (int, error) {
	if b.decoder == nil && b.err == nil {
		switch b.coding {
		case "gzip":
			b.decoder, b.err = gzip.NewReader(b.raw)
		case "zstd":
			b.zr, b.err = zstd.NewReader(b.raw, zstd.WithDecoderConcurrency(1))
			b.decoder = b.zr
		}
	}
	if b.err != nil {
		return 0, b.err
	}
	return b.decoder.Read(p)
}

func (b *decodingBody) Close() error {
	if b.zr != nil {
		b.zr.Close()
	}
	return b.raw.Close()
}
