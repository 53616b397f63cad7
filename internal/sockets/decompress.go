package sockets

import (
	"compress/gzip"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// decompress asks for the listed codings (unless the request names its
// own Accept-Encoding) and decodes a response that uses one of them, as
// net/http's transparent gzip does: Content-Encoding and Content-Length
// are removed and Response.Uncompressed is set.
func decompress(codings []string) func(http.RoundTripper) http.RoundTripper {
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
