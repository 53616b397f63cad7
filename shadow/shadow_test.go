package shadow_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fusiongo/transport/answer"
	"github.com/fusiongo/transport/env"
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
				// Close has waited for the comparison: the Comparer has
				// been called by now, or never will be.
				want := seen{"products", `{"data":{"price":899}}`, `{"data":{"price":900}}`}
				select {
				case got := <-calls:
					if got != want {
						t.Errorf("the Comparer saw %+v, want %+v", got, want)
					}
				default:
					t.Fatal("the Comparer was not called")
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

// draws returns a Rand that returns vs in turn, over and over.
func draws(vs ...float64) func() float64 {
	var mu sync.Mutex
	i := 0
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		v := vs[i%len(vs)]
		i++
		return v
	}
}

// TestRateDraws: a query is shadowed when Options.Rand draws below Rate,
// and not when it draws Rate itself or more; so a zero Rate shadows
// nothing even on a draw of 0. The candidate receives exactly the queries
// whose draw was below the rate.
func TestRateDraws(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rate  float64
		draws []float64
		want  []bool // per query, in order: shadowed
	}{
		{"below, at, above the rate", 0.5, []float64{0.25, 0.5, 0.75, 0.4999}, []bool{true, false, false, true}},
		{"zero rate, zero draw", 0, []float64{0}, []bool{false, false}},
		{"rate 1, the highest draw", 1, []float64{0.9999999}, []bool{true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cand := &recorder{}
			s := shadow.New(fixed(`{"data":{}}`), cand, shadow.Options{Rate: tc.rate, Rand: draws(tc.draws...), MaxConcurrent: len(tc.want), Publisher: &mismatches{}})
			for i := range tc.want {
				resp, err := s.Post(context.Background(), "products", []byte(fmt.Sprintf(`{"query":"{ q%d }"}`, i)))
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			s.Close()
			var want []string
			for i, shadowed := range tc.want {
				if shadowed {
					want = append(want, fmt.Sprintf(`{"query":"{ q%d }"}`, i))
				}
			}
			if got := cand.bodies(); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("the candidate received %q, want %q", got, want)
			}
		})
	}
}

// TestRateDefaultRand: without Options.Rand, a Rate of 0.5 shadows about
// half of the queries (400 queries: fewer than 100 or more than 300 would
// take a draw twenty standard deviations off).
func TestRateDefaultRand(t *testing.T) {
	const n = 400
	var got atomic.Int64
	s := shadow.New(fixed(`{"data":{}}`), countingSender{fixed(`{"data":{}}`), &got}, shadow.Options{Rate: 0.5, MaxConcurrent: n, Publisher: &mismatches{}})
	for range n {
		resp, err := s.Post(context.Background(), "products", []byte(`{"query":"{ a }"}`))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	s.Close()
	if c := got.Load(); c < n/4 || c > 3*n/4 {
		t.Errorf("Rate 0.5 shadowed %d of %d queries", c, n)
	}
}

// TestNotQueryCountsSampled: Stats.NotQuery counts the sampled requests
// that were not queries, not every request that was not one: at a rate
// that samples half, half of the mutations count, and none is shadowed.
func TestNotQueryCountsSampled(t *testing.T) {
	cand := &recorder{}
	s := shadow.New(fixed(`{"data":{}}`), cand, shadow.Options{Rate: 0.5, Rand: draws(0.1, 0.9), Publisher: &mismatches{}})
	for range 10 {
		resp, err := s.Post(context.Background(), "products", []byte(`{"query":"mutation { pay }"}`))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	s.Close()
	if st := s.Stats(); st.NotQuery != 5 || st.Sampled != 0 {
		t.Errorf("Stats = %+v, want NotQuery 5 (the sampled half), Sampled 0", st)
	}
	if got := cand.bodies(); len(got) != 0 {
		t.Errorf("the candidate received %q, want no mutation", got)
	}
}

// recorder is a candidate that answers like fixed and keeps the bodies it
// received, in order.
type recorder struct {
	mu  sync.Mutex
	got []string
}

func (r *recorder) Post(ctx context.Context, schema string, b []byte) (*http.Response, error) {
	r.mu.Lock()
	r.got = append(r.got, string(b))
	r.mu.Unlock()
	return fixed(`{"data":{}}`).Post(ctx, schema, b)
}

func (r *recorder) Do(ctx context.Context, schema string, req *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	return r.Post(ctx, schema, b)
}

func (r *recorder) Reload(env.Config) error { return nil }
func (r *recorder) Close() error            { return nil }

func (r *recorder) bodies() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(slices.Values(r.got))
}
