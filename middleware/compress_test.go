package middleware_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/middleware"
)

// bigQuery is a query body over the default MinBytes, as an entity
// request's variables make it.
var bigQuery = `{"query":"query Q($representations: [_Any!]!) { _entities(representations: $representations) { ... on Product { name } } }","variables":{"representations":[` +
	strings.Repeat(`{"__typename":"Product","upc":"1234567890"},`, 60) + `{"__typename":"Product","upc":"0"}]}}`

// incompressible is a body over MinBytes that both codecs make larger:
// random bytes, the same on every run.
var incompressible = func() string {
	b := make([]byte, 4096)
	rand.NewChaCha8([32]byte{1}).Read(b)
	return string(b)
}()

// compressibleOf is a query body of exactly n bytes that both codecs
// make much smaller.
func compressibleOf(n int) string {
	const head, tail = `{"query":"{ a }","variables":{"pad":"`, `"}}`
	return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
}

// decode decodes body as its Content-Encoding says.
func decode(t testing.TB, encoding string, body []byte) string {
	t.Helper()
	switch encoding {
	case "":
		return string(body)
	case "gzip":
		r, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("gzip reader: %v", err)
		}
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("gunzip: %v", err)
		}
		return string(b)
	case "zstd":
		d, err := zstd.NewReader(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		b, err := d.DecodeAll(body, nil)
		if err != nil {
			t.Fatalf("zstd decode: %v", err)
		}
		return string(b)
	}
	t.Fatalf("unknown Content-Encoding %q", encoding)
	return ""
}

// TestCompress: each codec's body decodes to the original, with
// Content-Length the compressed length; what Compress leaves alone goes as
// it was.
func TestCompress(t *testing.T) {
	for _, codec := range []string{middleware.CodecGzip, middleware.CodecZstd} {
		for _, tc := range []struct {
			name       string
			method     string
			body       string
			encoding   string // set by the caller
			rewindable bool
			compressed bool
		}{
			{"large rewindable", http.MethodPost, bigQuery, "", true, true},
			{"large read once", http.MethodPost, bigQuery, "", false, true},
			{"under min_bytes", http.MethodPost, queryBody, "", true, false},
			{"already encoded", http.MethodPost, bigQuery, "br", true, false},
			{"GET", http.MethodGet, bigQuery, "", true, false},
			{"grows when compressed", http.MethodPost, incompressible, "", true, false},
			{"one byte under min_bytes", http.MethodPost, compressibleOf(middleware.DefaultCompressMinBytes - 1), "", true, false},
			{"one byte under min_bytes, read once", http.MethodPost, compressibleOf(middleware.DefaultCompressMinBytes - 1), "", false, false},
			{"at min_bytes", http.MethodPost, compressibleOf(middleware.DefaultCompressMinBytes), "", true, true},
			{"at min_bytes, read once", http.MethodPost, compressibleOf(middleware.DefaultCompressMinBytes), "", false, true},
		} {
			t.Run(codec+"/"+tc.name, func(t *testing.T) {
				type seen struct {
					encoding string
					length   int64
					body     []byte
				}
				var got seen
				rt := middleware.Compress(middleware.CompressConfig{Codec: codec})(roundTripFunc(func(req *http.Request) (*http.Response, error) {
					b, err := io.ReadAll(req.Body)
					if err != nil {
						t.Fatal(err)
					}
					got = seen{req.Header.Get("Content-Encoding"), req.ContentLength, b}
					resp, _ := fakeResponse(req, 200, "{}")
					return resp, nil
				}))
				req := newRequest(t, context.Background(), "http://products.test/graphql", tc.body, tc.rewindable)
				req.Method = tc.method
				if tc.encoding != "" {
					req.Header.Set("Content-Encoding", tc.encoding)
				}
				resp, err := rt.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if req.Header.Get("Content-Encoding") != tc.encoding {
					t.Errorf("the caller's header was modified: %v", req.Header)
				}
				if !tc.compressed {
					if got.encoding != tc.encoding || string(got.body) != tc.body {
						t.Errorf("sent Content-Encoding %q and %d bytes, want the request as it was", got.encoding, len(got.body))
					}
					return
				}
				if got.encoding != codec {
					t.Fatalf("Content-Encoding %q, want %q", got.encoding, codec)
				}
				if got.length != int64(len(got.body)) || len(got.body) >= len(tc.body) {
					t.Errorf("Content-Length %d, body %d bytes of %d: want the compressed length, smaller", got.length, len(got.body), len(tc.body))
				}
				if d := decode(t, got.encoding, got.body); d != tc.body {
					t.Errorf("decoded body %q, want %q", d, tc.body)
				}
			})
		}
	}
}

// TestCompressRetrySendsSameBytes: a retried query carries the bytes of its
// first try, compressed once; Retry still sees a query.
func TestCompressRetrySendsSameBytes(t *testing.T) {
	for _, codec := range []string{middleware.CodecGzip, middleware.CodecZstd} {
		t.Run(codec, func(t *testing.T) {
			var bodies [][]byte
			compressed := 0
			rt := middleware.Chain(roundTripFunc(func(req *http.Request) (*http.Response, error) {
				b, _ := io.ReadAll(req.Body)
				bodies = append(bodies, b)
				// What a transport reads to resend after a dead connection:
				// the same compressed bytes, under their own length.
				if req.GetBody == nil {
					t.Errorf("try %d: no GetBody", len(bodies))
				} else if rc, err := req.GetBody(); err != nil {
					t.Errorf("try %d: GetBody: %v", len(bodies), err)
				} else if again, _ := io.ReadAll(rc); !bytes.Equal(again, b) {
					t.Errorf("try %d: GetBody gives %d bytes other than the %d sent", len(bodies), len(again), len(b))
				}
				if req.Header.Get("Content-Encoding") != codec || req.ContentLength != int64(len(b)) {
					t.Errorf("try %d: Content-Encoding %q, Content-Length %d of %d bytes", len(bodies), req.Header.Get("Content-Encoding"), req.ContentLength, len(b))
				}
				status := http.StatusServiceUnavailable
				if len(bodies) == 3 {
					status = http.StatusOK
				}
				resp, _ := fakeResponse(req, status, "{}")
				return resp, nil
			}),
				middleware.Compress(middleware.CompressConfig{Codec: codec, OnCompressed: func(_ context.Context, raw, sent int) { compressed++ }}),
				middleware.Retry(fastRetry(3)))
			resp, err := rt.RoundTrip(newRequest(t, context.Background(), "http://products.test/graphql", bigQuery, true))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if len(bodies) != 3 || compressed != 1 {
				t.Fatalf("%d tries, %d compressions: want 3 tries of one compression", len(bodies), compressed)
			}
			for i, b := range bodies {
				if !bytes.Equal(b, bodies[0]) {
					t.Errorf("try %d sent other bytes than the first", i+1)
				}
			}
			if d := decode(t, codec, bodies[0]); d != bigQuery {
				t.Errorf("decoded %q, want the query", d)
			}
		})
	}
}

// unread is a request body that hands its bytes over, as Post's does.
type unread struct {
	*bytes.Reader
	b    []byte
	read bool
}

func (u *unread) UnreadBytes() []byte { return u.b }
func (u *unread) Read(p []byte) (int, error) {
	u.read = true
	return u.Reader.Read(p)
}
func (u *unread) Close() error { return nil }

// TestCompressUnreadBytes: a body with UnreadBytes is compressed from its
// bytes, never read.
func TestCompressUnreadBytes(t *testing.T) {
	var sent []byte
	rt := middleware.Compress(middleware.CompressConfig{Codec: middleware.CodecGzip})(roundTripFunc(func(req *http.Request) (*http.Response, error) {
		sent, _ = io.ReadAll(req.Body)
		resp, _ := fakeResponse(req, 200, "{}")
		return resp, nil
	}))
	body := &unread{Reader: bytes.NewReader([]byte(bigQuery)), b: []byte(bigQuery)}
	req, _ := http.NewRequest(http.MethodPost, "http://products.test/graphql", body)
	req.ContentLength = int64(len(bigQuery))
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if body.read {
		t.Error("the body was read")
	}
	if d := decode(t, "gzip", sent); d != bigQuery {
		t.Errorf("decoded %q, want the query", d)
	}
}

// TestCompressHedgeSendsSameBytes: a hedge of a compressed query sends the
// bytes of the first attempt, compressed once. The first attempt is held
// until the hedge arrives.
func TestCompressHedgeSendsSameBytes(t *testing.T) {
	bodies := make(chan []byte, 2)
	hedgeIn := make(chan struct{})
	compressed := 0
	var once sync.Once
	rt := middleware.Chain(roundTripFunc(func(req *http.Request) (*http.Response, error) {
		b, _ := io.ReadAll(req.Body)
		bodies <- b
		if len(bodies) == 1 && req.Header.Get("X-Hedge-Test") == "" {
			// The first to arrive waits for the second (the hedge) or its
			// cancellation.
			select {
			case <-hedgeIn:
			case <-req.Context().Done():
				return nil, req.Context().Err()
			case <-time.After(guard):
				t.Error("the first attempt was never hedged")
			}
		} else {
			once.Do(func() { close(hedgeIn) })
		}
		resp, _ := fakeResponse(req, 200, "{}")
		return resp, nil
	}),
		middleware.Compress(middleware.CompressConfig{Codec: middleware.CodecGzip, OnCompressed: func(context.Context, int, int) { compressed++ }}),
		middleware.Hedge(middleware.HedgeConfig{Delay: time.Millisecond, MaxExtra: 1}))
	resp, err := rt.RoundTrip(newRequest(t, context.Background(), "http://products.test/graphql", bigQuery, true))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	first, second := await(t, bodies, "the first attempt's body"), await(t, bodies, "the hedge's body")
	if !bytes.Equal(first, second) || compressed != 1 {
		t.Errorf("hedge sent the same bytes: %t; %d compressions, want 1", bytes.Equal(first, second), compressed)
	}
	if d := decode(t, "gzip", second); d != bigQuery {
		t.Errorf("decoded %q, want the query", d)
	}
}

// TestCompressRetryHedged: the retry of a compressed query is hedged as
// its first try would be: Hedge, inside Retry, reads the query's kind from
// the uncompressed body. The server answers 503 to the first try and holds
// the retry until its hedge arrives.
func TestCompressRetryHedged(t *testing.T) {
	for _, codec := range []string{middleware.CodecGzip, middleware.CodecZstd} {
		t.Run(codec, func(t *testing.T) {
			var mu sync.Mutex
			var bodies [][]byte
			third := make(chan struct{})
			rt := middleware.Chain(roundTripFunc(func(req *http.Request) (*http.Response, error) {
				b, _ := io.ReadAll(req.Body)
				mu.Lock()
				bodies = append(bodies, b)
				n := len(bodies)
				mu.Unlock()
				status := http.StatusOK
				switch n {
				case 1:
					status = http.StatusServiceUnavailable
				case 2:
					select {
					case <-third:
					case <-req.Context().Done():
						return nil, req.Context().Err()
					case <-time.After(guard):
						t.Error("the held retry was never hedged")
					}
				case 3:
					close(third)
				}
				resp, _ := fakeResponse(req, status, "{}")
				return resp, nil
			}),
				middleware.Compress(middleware.CompressConfig{Codec: codec}),
				middleware.Retry(fastRetry(2)),
				middleware.Hedge(middleware.HedgeConfig{Delay: time.Millisecond, MaxExtra: 1}))
			resp, err := rt.RoundTrip(newRequest(t, context.Background(), "http://products.test/graphql", bigQuery, true))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			if len(bodies) != 3 {
				t.Fatalf("%d tries, want 3 (first, retry, the retry's hedge)", len(bodies))
			}
			for i, b := range bodies {
				if d := decode(t, codec, b); d != bigQuery {
					t.Errorf("try %d decodes to %q, want the query", i+1, d)
				}
			}
		})
	}
}

// TestCompressOnCompressed: OnCompressed reports each call whose body went
// compressed, with the raw and sent lengths, once the call returned, an
// error of the source schema's included; not a call that a breaker, rate
// limit or max_pending_requests further in refused unsent, which saved
// nothing.
func TestCompressOnCompressed(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error // of the transport; nil: 200
		want bool
	}{
		{"answered", nil, true},
		{"transport error", errors.New("connection reset by peer"), true},
		{"circuit open", fault.ErrCircuitOpen, false},
		{"rate limited", fault.ErrRateLimited, false},
		{"overloaded", fault.ErrOverloaded, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sent int
			next := roundTripFunc(func(req *http.Request) (*http.Response, error) {
				b, _ := io.ReadAll(req.Body)
				sent = len(b)
				if tc.err != nil {
					return nil, fmt.Errorf("source schema %q: %w", "products", tc.err)
				}
				resp, _ := fakeResponse(req, 200, "{}")
				return resp, nil
			})
			var calls [][2]int
			rt := middleware.Compress(middleware.CompressConfig{Codec: middleware.CodecGzip, OnCompressed: func(_ context.Context, raw, sent int) { calls = append(calls, [2]int{raw, sent}) }})(next)
			resp, err := rt.RoundTrip(newRequest(t, context.Background(), "http://products.test/graphql", bigQuery, true))
			if err == nil {
				resp.Body.Close()
			}
			if !tc.want {
				if len(calls) != 0 {
					t.Errorf("OnCompressed called %v for a call refused unsent", calls)
				}
				return
			}
			if want := [][2]int{{len(bigQuery), sent}}; fmt.Sprint(calls) != fmt.Sprint(want) {
				t.Errorf("OnCompressed calls %v, want %v", calls, want)
			}
		})
	}
}
