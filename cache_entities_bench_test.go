package transport_test

import (
	"context"
	"io"
	"net/http"
	"testing"
)

// BenchmarkResponseCacheEntities measures an _entities call of 5
// representations answered entity by entity from the memory store (every
// representation a hit after the first call), on h1, through PostFunc and
// Post: the cache stage's cost for a gateway's commonest call.
//
//	go test -run '^$' -bench BenchmarkResponseCacheEntities -benchmem .
func BenchmarkResponseCacheEntities(b *testing.B) {
	s := newEntityServer(b, "public, max-age=3600")
	inv := newInvoker(b, cachedConfig(pathH1, s.URL, nil))
	body := []byte(entitiesBody(false, "1", "2", "3", "4", "5"))
	want := entityAnswer(nil, "1", "2", "3", "4", "5")
	ctx := context.Background()
	var buf []byte
	read := func(resp *http.Response) error {
		var err error
		buf, err = appendBody(buf[:0], resp)
		return err
	}
	if err := inv.PostFunc(ctx, "products", body, read); err != nil || string(buf) != want {
		b.Fatalf("first call: %v, %s", err, buf)
	}
	b.Run("PostFunc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := inv.PostFunc(ctx, "products", body, read); err != nil {
				b.Fatal(err)
			}
		}
		if string(buf) != want {
			b.Fatalf("got %s, want %s", buf, want)
		}
	})
	b.Run("Post", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			resp, err := inv.Post(ctx, "products", body)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	if n := s.requests(); n != 1 {
		b.Fatalf("the source schema got %d requests, want 1", n)
	}
}

// appendBody appends resp's body to buf.
func appendBody(buf []byte, resp *http.Response) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := resp.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
