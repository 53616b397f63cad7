package shadow_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fusiongo/transport/answer"
	"github.com/fusiongo/transport/shadow"
)

// mismatches keeps what a Shadow publishes.
type mismatches struct {
	mu  sync.Mutex
	got []shadow.Mismatch
}

func (m *mismatches) Publish(_ context.Context, x shadow.Mismatch) {
	m.mu.Lock()
	m.got = append(m.got, x)
	m.mu.Unlock()
}
func (m *mismatches) Compared(context.Context, string, bool)  {}
func (m *mismatches) Dropped(context.Context, string, string) {}

// TestComparer: Options.Comparer sees both whole answers, primary first,
// and what it returns is published; nil is the default, which finds the
// JSON member that differs.
func TestComparer(t *testing.T) {
	type seen struct{ schema, primary, candidate string }
	calls := make(chan seen, 1)
	custom := shadow.ComparerFunc(func(schema string, p, c answer.Answer) []answer.Difference {
		calls <- seen{schema, string(p.Body), string(c.Body)}
		return []answer.Difference{{Kind: answer.KindBody, Path: "custom"}}
	})
	for _, tc := range []struct {
		name     string
		comparer shadow.Comparer
		wantPath string
	}{
		{"default", nil, "data.price"},
		{"custom", custom, "custom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pub := &mismatches{}
			s := shadow.New(fixed(`{"data":{"price":899}}`), fixed(`{"data":{"price":900}}`), shadow.Options{Rate: 1, Comparer: tc.comparer, Publisher: pub})
			resp, err := s.Post(context.Background(), "products", []byte(`{"query":"{ price }"}`))
			if err != nil {
				t.Fatal(err)
			}
			io.ReadAll(resp.Body)
			resp.Body.Close()
			s.Close()
			if tc.comparer != nil {
				want := seen{"products", `{"data":{"price":899}}`, `{"data":{"price":900}}`}
				if got := <-calls; got != want {
					t.Errorf("the Comparer saw %+v, want %+v", got, want)
				}
			}
			pub.mu.Lock()
			defer pub.mu.Unlock()
			if len(pub.got) != 1 || len(pub.got[0].Differences) != 1 || pub.got[0].Differences[0].Path != tc.wantPath {
				t.Fatalf("published %+v, want one mismatch at %s", pub.got, tc.wantPath)
			}
			if m := pub.got[0]; m.Schema != "products" || m.PrimaryStatus != 200 || m.CandidateStatus != 200 {
				t.Errorf("mismatch %+v, want products with both statuses 200", m)
			}
		})
	}
}

// TestLogPublisherZeroValue: the zero LogPublisher logs to slog.Default(),
// as its doc says, instead of panicking on its nil Logger.
func TestLogPublisherZeroValue(t *testing.T) {
	var buf strings.Builder
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(prev) })
	var p shadow.LogPublisher
	p.Publish(context.Background(), shadow.Mismatch{Schema: "products"})
	p.Dropped(context.Background(), "products", shadow.DropBusy)
	if out := buf.String(); !strings.Contains(out, "shadow mismatch") || !strings.Contains(out, "shadow comparison dropped") {
		t.Errorf("slog.Default() got %q; want the mismatch and the drop", out)
	}
}

// countingSender is a fixed answer that counts the requests it got.
type countingSender struct {
	fixed
	n *atomic.Int64
}

func (c countingSender) Post(ctx context.Context, s string, b []byte) (*http.Response, error) {
	c.n.Add(1)
	return c.fixed.Post(ctx, s, b)
}

func (c countingSender) Do(ctx context.Context, s string, r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.fixed.Do(ctx, s, r)
}

// TestRate: a zero Rate shadows nothing, as env.ShadowSettings' zero Rate
// means shadowing off; 1 shadows every query (the candidate receives each).
func TestRate(t *testing.T) {
	for _, tc := range []struct {
		rate float64
		want int64
	}{{0, 0}, {-1, 0}, {1, 10}, {2, 10}} {
		t.Run(fmt.Sprint(tc.rate), func(t *testing.T) {
			var got atomic.Int64
			s := shadow.New(fixed(`{"data":{}}`), countingSender{fixed(`{"data":{}}`), &got}, shadow.Options{Rate: tc.rate, MaxConcurrent: 10, Publisher: &mismatches{}})
			for range 10 {
				resp, err := s.Post(context.Background(), "products", []byte(`{"query":"{ a }"}`))
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			s.Close()
			if n := got.Load(); n != tc.want {
				t.Errorf("Rate %v: the candidate received %d of 10 queries, want %d", tc.rate, n, tc.want)
			}
		})
	}
}
