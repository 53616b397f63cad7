package transport_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
)

// TestPostFuncLateClose: a callback hands the body to a goroutine that
// reads it and closes it with the usual defer, so the Close runs after the
// callback has returned, while the call's memory serves the next call.
// Every caller still gets its own answer, header and body, and the late
// Close touches nothing of another call (under -race, no race is
// reported: the race detector fails the test).
func TestPostFuncLateClose(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			srv := echoServer(t)
			inv := newInvoker(t, config(path, "products", srv.URL()))
			var late sync.WaitGroup // the reading goroutines, which outlive their callbacks
			defer late.Wait()
			var callers sync.WaitGroup
			for g := range 8 {
				callers.Go(func() {
					for i := range 60 {
						id := fmt.Sprintf("late%d-%d", g, i)
						err := inv.PostFunc(context.Background(), "products", []byte(id), lateOwnEcho(&late, id))
						if err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			callers.Wait()
		})
	}
}

// lateOwnEcho is a PostFunc callback that hands the body to a goroutine of
// late, which reads it and closes it after the send back (so often after
// the callback returned, the usual deferred Close), and checks that the
// answer is the echo of id: its own.
func lateOwnEcho(late *sync.WaitGroup, id string) func(*http.Response) error {
	return func(resp *http.Response) error {
		type read struct {
			body []byte
			err  error
		}
		got := make(chan read, 1)
		late.Go(func() {
			defer resp.Body.Close() // runs after the send: after the callback, often
			b, err := io.ReadAll(resp.Body)
			got <- read{b, err}
		})
		r := <-got
		if r.err != nil {
			return r.err
		}
		if echo := resp.Header.Get("X-Echo"); echo != id || string(r.body) != echoBody(id) {
			return fmt.Errorf("answer of %q: X-Echo %q, body %q", id, echo, r.body)
		}
		return nil
	}
}
