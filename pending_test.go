package transport_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/gateway"
	"github.com/fusiongo/transport/internal/testsupport/queuemodel"
)

// queueRecorder feeds a queue model the pool's queue events
// (transport.WithQueueHook) of the requests numbered by the X-Call header
// of the gateway request in their context; option gives the invoker the
// hook.
type queueRecorder struct{ queuemodel.Model }

// option has the invoker report its pools' queue events to r.
func (r *queueRecorder) option() transport.Option { return transport.WithQueueHook(r.event) }

func (r *queueRecorder) event(ctx context.Context, ev backend.QueueEvent) {
	g := gateway.Request(ctx)
	if g == nil || g.Header.Get("X-Call") == "" {
		return // another test's request
	}
	var n int
	fmt.Sscan(g.Header.Get("X-Call"), &n)
	r.Event(n, ev)
}

// TestOverloadedNotRetriedSentOnLegacy: a query refused at
// max_pending_requests is not retried (the pool refuses it once, with
// retry.max_attempts 3), and under a canary a mutation that the sockets
// side refused goes to legacy, by Post and by Do, as one its breaker
// refused.
func TestOverloadedNotRetriedSentOnLegacy(t *testing.T) {
	for _, canaried := range []bool{false, true} {
		t.Run(map[bool]string{false: "retry", true: "canary"}[canaried], func(t *testing.T) { overloadedNotRetried(t, canaried) })
	}
}

func overloadedNotRetried(t *testing.T, canaried bool) {
	// Retry tries queries again; a canary sends a failed query to legacy
	// anyway, and a refused mutation only because it was not sent.
	body := map[bool]string{false: `{"query":"{ ok }"}`, true: `{"query":"mutation { buy }"}`}[canaried]
	forEngines(t, func(t *testing.T, engine string) {
		release := make(chan struct{})
		arrived := make(chan struct{}, 2)
		srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Hold") != "" {
				arrived <- struct{}{}
				<-release
			}
			io.WriteString(w, `{"data":{"ok":true}}`)
		})
		edit := onEngine(engine, func(s *env.SourceSchema) {
			s.MaxConnsPerHost = 1
			s.MaxPendingRequests = 1
			s.Retry = env.RetrySettings{MaxAttempts: 3, WaitMin: time.Millisecond, WaitMax: time.Millisecond}
		})
		cfg := withSchema(env.PathSockets, srv.url, edit)
		if canaried {
			cfg = canaryConfig(env.CanarySettings{Rate: 1}, "products", srv.url)
			s := cfg.SourceSchemas["products"]
			edit(&s)
			cfg.SourceSchemas["products"] = s
		}
		cfg.ForwardHeaders = []string{"X-Call", "X-Hold"}
		rec := &queueRecorder{}
		inv := newInvoker(t, cfg, rec.option())
		wg := fillQueue(t, inv, rec, arrived)
		legacyBefore, _ := countPaths(srv)
		post := func() (*http.Response, error) {
			return inv.Post(gatewayCtx("X-Call", "2"), "products", []byte(body))
		}
		do := func() (*http.Response, error) {
			req, _ := http.NewRequest(http.MethodPost, srv.url, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			return inv.Do(gatewayCtx("X-Call", "3"), "products", req)
		}
		for _, send := range []func() (*http.Response, error){post, do} {
			resp, err := send()
			if canaried {
				if err != nil {
					t.Errorf("canary: %v, want the legacy answer", err)
				} else {
					readAll(t, resp)
				}
			} else if !errors.Is(err, fault.ErrOverloaded) {
				t.Errorf("error %v, want ErrOverloaded", err)
			}
		}
		close(release)
		wg.Wait()
		refused := rec.Counts().Refused
		if refused != 2 {
			t.Errorf("the pool refused %d times, want 2: a refusal is not retried", refused)
		}
		legacy, _ := countPaths(srv)
		if want := map[bool]int{false: 0, true: 2}[canaried]; legacy-legacyBefore != want {
			t.Errorf("legacy sent %d of the refused calls, want %d", legacy-legacyBefore, want)
		}
	})
}

// fillQueue fills the queue of a schema with max_conns_per_host 1 and
// max_pending_requests 1 whose server reports each held request (X-Hold)
// on arrived: one call in flight, one waiting. rec is the recorder whose
// option inv was built with; fillQueue sets its onEvent. The caller
// releases the server, then waits on the returned group for both calls;
// rec has the pool's queue events.
func fillQueue(t *testing.T, inv transport.Invoker, rec *queueRecorder, arrived <-chan struct{}) *sync.WaitGroup {
	t.Helper()
	joined := make(chan struct{}, 1)
	rec.OnEvent(func(_ queuemodel.Counts, ev backend.QueueEvent) {
		if ev == backend.QueueJoined {
			joined <- struct{}{}
		}
	})
	wg := &sync.WaitGroup{}
	for i, step := range []<-chan struct{}{arrived, joined} {
		wg.Go(func() {
			resp, err := inv.Post(gatewayCtx("X-Call", fmt.Sprint(i), "X-Hold", "1"), "products", []byte(`{"query":"{ ok }"}`))
			if err != nil {
				t.Errorf("held call %d: %v", i, err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
		select {
		case <-step:
		case <-time.After(gapGuard):
			t.Fatalf("held call %d neither reached the server nor the queue", i)
		}
	}
	return wg
}

// TestOverloadedLeavesBreakerClosed (issue 29, defect 1): the pool's own
// refusals at max_pending_requests are not the schema's failures. With
// max_conns_per_host 1, max_pending_requests 1 and a breaker of
// min_requests 5, eight calls refused while the queue is full each get
// ErrOverloaded (none ErrCircuitOpen) naming the schema and the bound,
// the breaker never changes state,
// and after the release every further call reaches the server.
func TestOverloadedLeavesBreakerClosed(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		release := make(chan struct{})
		arrived := make(chan struct{}, 2)
		var seen atomic.Int64
		srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
			seen.Add(1)
			if r.Header.Get("X-Hold") != "" {
				arrived <- struct{}{}
				<-release
			}
			io.WriteString(w, `{"data":{"ok":true}}`)
		})
		cfg := engineConfig(engine, srv.url, func(s *env.SourceSchema) {
			s.MaxConnsPerHost = 1
			s.MaxPendingRequests = 1
			s.CircuitBreaker = env.BreakerSettings{Enabled: env.Enabled, MinRequests: 5, FailureRatio: 0.5, Window: 10 * time.Second, OpenFor: time.Hour}
		})
		cfg.ForwardHeaders = []string{"X-Call", "X-Hold"}
		var evs resilienceEvents
		rec := &queueRecorder{}
		inv := newInvoker(t, cfg, transport.WithResilienceHook(evs.hook), rec.option())
		wg := fillQueue(t, inv, rec, arrived)
		for i := range 8 {
			_, err := inv.Post(gatewayCtx("X-Call", fmt.Sprint(10+i)), "products", []byte(`{"query":"{ ok }"}`))
			if !errors.Is(err, fault.ErrOverloaded) || errors.Is(err, fault.ErrCircuitOpen) {
				t.Errorf("refused call %d: error %v, want ErrOverloaded (the breaker must not open on it)", i, err)
			} else if !strings.Contains(err.Error(), `source schema "products"`) || !strings.Contains(err.Error(), "max_pending_requests 1") {
				t.Errorf("refused call %d: error %q does not name the schema and the bound", i, err)
			}
		}
		close(release)
		wg.Wait()
		for i := range 10 {
			if st, err := call(inv, queryBody); err != nil || st != http.StatusOK {
				t.Fatalf("call %d after the burst: %d, %v; want the server's 200", i, st, err)
			}
		}
		if n := seen.Load(); n != 12 {
			t.Errorf("the server saw %d requests, want 12 (2 held, 10 after): no refused call is sent", n)
		}
		if got := evs.transitions(); len(got) != 0 {
			t.Errorf("breaker transitions %v, want none: a refusal of the pool is not a failure", got)
		}
	})
}
