package sockets

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/backend"
)

// hungResolver ignores its context: each lookup blocks until release
// closes, as a resolver that never looks at ctx would.
type hungResolver struct {
	release chan struct{}
	lookups atomic.Int32
}

func (r *hungResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	r.lookups.Add(1)
	<-r.release
	return nil, errors.New("released")
}

// TestResolverIgnoresContext: a request to a host whose resolver never
// answers, nor honours its context, ends after the lookup's bound with an
// error that names the host and the resolver and wraps
// context.DeadlineExceeded; one lookup is out, not one per refresh.
func TestResolverIgnoresContext(t *testing.T) {
	r := &hungResolver{release: make(chan struct{})}
	t.Cleanup(func() { close(r.release) })
	u, _ := url.Parse("http://products.invalid:8080/graphql")
	cfg := engineSchema(env.EngineNetHTTP, u.String(), func(s *env.SourceSchema) { s.DNSRefresh = 10 * time.Millisecond })
	tr := openSchemaWith(t, cfg, func(s *backend.Schema) { s.Resolver = r })
	ctx, cancel := context.WithTimeout(context.Background(), 4*resolveTimeout) // fails a broken bound, never hangs
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(`{"query":"{a}"}`))
	resp, err := tr.RoundTrip(req)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		t.Fatal("a request to a host that never resolved got an answer")
	}
	if ctx.Err() != nil {
		t.Fatalf("the request waited past the lookup's bound (until its own context ended): %v", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "products.invalid") || !strings.Contains(err.Error(), "*sockets.hungResolver") {
		t.Errorf("error %q, want one naming the host and the resolver, wrapping context.DeadlineExceeded", err)
	}
	if n := r.lookups.Load(); n != 1 {
		t.Errorf("%d lookups out at once, want 1: a hung one is waited for, not repeated", n)
	}
}
