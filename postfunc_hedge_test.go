package transport_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
)

// hedgedEcho is a source schema for PostFunc under hedging: it answers
// each query with its variable id (X-Echo and echoBody), and, by the id's
// first letter, holds it so that a hedge goes and a chosen attempt wins:
// "h", the hedge wins: the first arrival waits for the second, then for
// the client to go (its cancellation), and the second answers; "f", the
// first try wins while its hedge is out: the first arrival answers once
// the second came, which waits for the client to go; any other id is
// answered at once.
type hedgedEcho struct {
	t        *testing.T
	mu       sync.Mutex
	arrivals map[string]int           // guarded by mu
	second   map[string]chan struct{} // guarded by mu: closed at an id's second arrival
}

func newHedgedEcho(t *testing.T) (*hedgedEcho, *schemaServer) {
	e := &hedgedEcho{t: t, arrivals: map[string]int{}, second: map[string]chan struct{}{}}
	return e, newSchemaServer(t, e.serve)
}

// query is the query whose answer is id.
func (e *hedgedEcho) query(id string) []byte {
	return fmt.Appendf(nil, `{"query":"query Q($id: String) { echo(id: $id) }","variables":{"id":%q}}`, id)
}

func (e *hedgedEcho) serve(w http.ResponseWriter, r *http.Request) {
	var q struct{ Variables struct{ ID string } }
	if err := json.NewDecoder(r.Body).Decode(&q); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id := q.Variables.ID
	e.mu.Lock()
	e.arrivals[id]++
	n := e.arrivals[id]
	second := e.second[id]
	if second == nil {
		second = make(chan struct{})
		e.second[id] = second
	}
	if n == 2 {
		close(second)
	}
	e.mu.Unlock()
	wait := func(ch <-chan struct{}, what string) bool {
		select {
		case <-ch:
			return true
		case <-time.After(resilienceGuard):
			e.t.Errorf("%s: arrival %d: %s never came", id, n, what)
			return false
		}
	}
	switch {
	case strings.HasPrefix(id, "h") && n == 1, strings.HasPrefix(id, "f") && n == 2:
		if n == 1 {
			wait(second, "the hedge")
		}
		wait(r.Context().Done(), "the loser's cancellation")
		return
	case strings.HasPrefix(id, "f") && n == 1:
		if !wait(second, "the hedge") {
			return
		}
	}
	w.Header().Set("X-Echo", id)
	io.WriteString(w, echoBody(id))
}

// count is how many times id arrived.
func (e *hedgedEcho) count(id string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.arrivals[id]
}

// TestPostFuncHedgedOwnAnswer: with hedging on, on every path, 8
// goroutines send queries through PostFunc, a third of them hedged with
// the hedge winning, a third hedged with the first try winning, the rest
// answered within the delay (on sockets:h1, with the calls' memory
// pooled and lent). Each callback hands the body to a goroutine that
// reads it and closes it after the callback returned, and every callback
// sees its own answer, header and body; under -race, no race is
// reported. Each held query reached the source schema twice: its hedge
// went.
func TestPostFuncHedgedOwnAnswer(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			echo, srv := newHedgedEcho(t)
			inv := newInvoker(t, withSchema(path, srv.URL(), func(s *env.SourceSchema) {
				s.Hedge = env.HedgeSettings{Enabled: env.Enabled, Delay: env.HedgeDelay{After: 20 * time.Millisecond}}
				s.Retry.BudgetMinPerSecond = 100000 // every held query's hedge goes
			}))
			var late sync.WaitGroup // the reading goroutines, which outlive their callbacks
			defer late.Wait()
			var callers sync.WaitGroup
			var held []string
			for g := range 8 {
				for i := range 30 {
					if i%3 != 2 {
						held = append(held, fmt.Sprintf("%c%d-%d", "hf"[i%3], g, i))
					}
				}
				callers.Go(func() {
					for i := range 30 {
						id := fmt.Sprintf("%c%d-%d", "hfq"[i%3], g, i)
						err := inv.PostFunc(context.Background(), "products", echo.query(id), lateOwnEcho(&late, id))
						if err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			callers.Wait()
			for _, id := range held {
				if n := echo.count(id); n != 2 {
					t.Errorf("held query %s reached the source schema %d times, want 2 (its hedge went)", id, n)
				}
			}
		})
	}
}

// TestPostFuncHedgedUnderReload: while 8 callers borrow answers under
// hedging (half of them through Post), a fifth of their queries hedged,
// the configuration is reloaded
// back and forth between the h1 and nethttp engines and the legacy path,
// so that calls are moved from a transport that lends its memory to one
// that may not; every callback still sees its own answer, and every call
// succeeds.
func TestPostFuncHedgedUnderReload(t *testing.T) {
	echo, srv := newHedgedEcho(t)
	hedged := func(path env.Path) env.Config {
		return withSchema(path, srv.URL(), func(s *env.SourceSchema) {
			s.Hedge = env.HedgeSettings{Enabled: env.Enabled, Delay: env.HedgeDelay{After: 5 * time.Millisecond}}
			s.Retry.BudgetMinPerSecond = 100000
		})
	}
	configs := []env.Config{hedged(pathH1), hedged(env.PathSockets), hedged(env.PathLegacy)}
	inv := newInvoker(t, configs[0])
	own := func(id string) func(*http.Response) error {
		return func(resp *http.Response) error {
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				return err
			}
			if got := resp.Header.Get("X-Echo"); got != id || string(body) != echoBody(id) {
				return fmt.Errorf("answer of %q: X-Echo %q, body %q", id, got, body)
			}
			return nil
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("%c%d-%d", "hqqqq"[i%5], g, i)
				var err error
				if g%2 == 0 {
					err = inv.PostFunc(context.Background(), "products", echo.query(id), own(id))
				} else {
					// A Post's memory is pooled by the hedge alone, until
					// the body is closed.
					var resp *http.Response
					if resp, err = inv.Post(context.Background(), "products", echo.query(id)); err == nil {
						err = own(id)(resp)
						resp.Body.Close()
					}
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for n := range 60 {
		if err := inv.Reload(configs[(n+1)%len(configs)]); err != nil {
			t.Errorf("reload %d: %v", n, err)
			break
		}
		// Each configuration serves a call before the next reload.
		id := fmt.Sprintf("between%d", n)
		if err := inv.PostFunc(context.Background(), "products", echo.query(id), own(id)); err != nil {
			t.Errorf("after reload %d: %v", n, err)
			break
		}
	}
	close(stop)
	wg.Wait()
}
