package transport_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
)

// echoUpgrade is a source schema that upgrades a request asking for
// Upgrade: echo-test to the protocol answered (answer: "" for echo-test
// itself), then echoes each line it reads until the client closes;
// closed receives once its side of the connection has seen the end.
func echoUpgrade(t *testing.T, answer string, closed chan<- error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !strings.EqualFold(r.Header.Get("Upgrade"), "echo-test") {
			http.Error(w, "want Upgrade: echo-test", http.StatusBadRequest)
			return
		}
		if answer == "" {
			answer = "echo-test"
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer conn.Close()
		fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: %s\r\nConnection: Upgrade\r\n\r\n", answer)
		brw.Flush()
		for {
			line, err := brw.ReadString('\n')
			if err != nil {
				closed <- err
				return
			}
			brw.WriteString("echo " + line)
			brw.Flush()
		}
	}
}

// upgradeRequest is a request asking url's server to upgrade to echo-test.
func upgradeRequest(t *testing.T, url string) *http.Request {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "echo-test")
	return req
}

// TestUpgrade: a request that asks for a protocol upgrade gets the 101 with
// a body it can write to, on every path and engine, through Do and
// through Transport.Client; the connection outlives the header and request
// bounds (messages echoed after twice the bound), and closing the body
// closes it (the server sees the end). The invoker's Close closes an
// upgraded connection its caller still holds.
func TestUpgrade(t *testing.T) {
	const bound = 100 * time.Millisecond
	for _, p := range paths {
		for _, call := range []string{"Do", "Client", "Close"} {
			t.Run(string(p)+"/"+call, func(t *testing.T) {
				closed := make(chan error, 1)
				srv := newSchemaServer(t, echoUpgrade(t, "", closed))
				var logs logBuffer
				inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) {
					s.HeaderTimeout = bound
					s.RequestTimeout = bound
				}), infoLog(&logs))
				var resp *http.Response
				var err error
				if call == "Client" {
					resp, err = inv.Client().Do(upgradeRequest(t, srv.URL()))
				} else {
					resp, err = inv.Do(context.Background(), "products", upgradeRequest(t, srv.URL()))
				}
				if err != nil {
					t.Fatalf("upgrade: %v", err)
				}
				if resp.StatusCode != http.StatusSwitchingProtocols {
					t.Fatalf("status %d, want 101", resp.StatusCode)
				}
				rwc, ok := resp.Body.(io.ReadWriteCloser)
				if !ok {
					t.Fatalf("the 101's body is a %T, not an io.ReadWriteCloser", resp.Body)
				}
				// Past both bounds: no bound of the request cuts it.
				past := time.NewTimer(2 * bound)
				<-past.C
				br := bufio.NewReader(rwc)
				for i := range 3 {
					msg := fmt.Sprintf("message %d\n", i)
					if _, err := io.WriteString(rwc, msg); err != nil {
						t.Fatalf("write %d: %v", i, err)
					}
					got, err := br.ReadString('\n')
					if err != nil || got != "echo "+msg {
						t.Fatalf("read %d: %q, %v; want %q", i, got, err, "echo "+msg)
					}
				}
				if call == "Close" {
					inv.Close()
				} else {
					rwc.Close()
				}
				select {
				case err := <-closed:
					if !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "reset") {
						t.Errorf("the server's read ended with %v, want the end of the connection", err)
					}
				case <-time.After(engineGuard):
					t.Fatal("the server never saw the connection close")
				}
				checkRanOn(t, engineOf(p), logs.String())
			})
		}
	}
}

// engineOf is the sockets engine of a path of paths ("" for legacy).
func engineOf(p env.Path) string {
	switch p {
	case pathH1:
		return env.EngineH1
	case env.PathSockets:
		return env.EngineNetHTTP
	}
	return ""
}

// TestUpgradeWrongProtocol: a 101 to another protocol than the one asked
// for is refused with an error naming the schema, and its connection
// closes, on every path and engine.
func TestUpgradeWrongProtocol(t *testing.T) {
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			closed := make(chan error, 1)
			srv := newSchemaServer(t, echoUpgrade(t, "h2c", closed))
			inv := newInvoker(t, withSchema(p, srv.URL(), nil))
			resp, err := inv.Do(context.Background(), "products", upgradeRequest(t, srv.URL()))
			if err == nil {
				resp.Body.Close()
				t.Fatalf("a 101 to h2c for Upgrade: echo-test was returned as an answer")
			}
			if !errors.Is(err, fault.ErrUnaskedUpgrade) || !strings.Contains(err.Error(), `"products"`) || !strings.Contains(err.Error(), `"h2c"`) {
				t.Errorf("error %v, want ErrUnaskedUpgrade naming the schema and the protocol", err)
			}
			select {
			case <-closed:
			case <-time.After(engineGuard):
				t.Fatal("the server never saw the connection close")
			}
		})
	}
}

// TestStreamCancel: a streamed answer (text/event-stream) reaches the
// caller event by event, past the header bound; cancelling the caller's
// context closes the source schema's connection, whether or not a Read is
// in progress, on every path and engine: the server sees its request end.
func TestStreamCancel(t *testing.T) {
	const bound = 100 * time.Millisecond
	for _, p := range paths {
		for _, reading := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/read in progress %v", p, reading), func(t *testing.T) {
				gone := make(chan struct{})
				srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "text/event-stream")
					for i := range 3 {
						fmt.Fprintf(w, "data: %d\n\n", i)
						w.(http.Flusher).Flush()
					}
					<-r.Context().Done() // the client went away
					close(gone)
				})
				inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) { s.HeaderTimeout = bound }))
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				resp, err := inv.Post(ctx, "products", []byte(`{"query":"subscription { s }"}`))
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				past := time.NewTimer(2 * bound) // events still come past the header bound
				<-past.C
				br := bufio.NewReader(resp.Body)
				for i := range 3 {
					line, err := br.ReadString('\n')
					if err != nil || line != fmt.Sprintf("data: %d\n", i) {
						t.Fatalf("event %d: %q, %v", i, line, err)
					}
					br.ReadString('\n')
				}
				readDone := make(chan error, 1)
				if reading {
					go func() {
						_, err := br.ReadString('\n') // blocks: no more events
						readDone <- err
					}()
				}
				cancel()
				select {
				case <-gone:
				case <-time.After(engineGuard):
					t.Fatal("the source schema's connection stayed open after the caller left")
				}
				if reading {
					if err := <-readDone; err == nil {
						t.Error("the blocked read returned no error after the cancel")
					}
				}
			})
		}
	}
}

// TestUpgradeQueryGoesAlone: a POST query that asks for a protocol upgrade
// is never shared (dedupe on) and never hedged (hedging on, 1ms): on every
// path and engine the caller gets the 101's connection itself, an
// io.ReadWriteCloser that echoes, and the source schema got one request.
// The server holds the 101 until a second request comes or 200ms pass, so
// that a hedge has every chance to go out.
func TestUpgradeQueryGoesAlone(t *testing.T) {
	for _, policy := range []string{"dedupe", "hedge"} {
		for _, p := range paths {
			t.Run(policy+"/"+string(p), func(t *testing.T) {
				closed := make(chan error, 2)
				chance := newSecondChance()
				echo := echoUpgrade(t, "", closed)
				srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
					io.ReadAll(r.Body) // the query, before the connection is upgraded
					chance.hold()
					echo(w, r)
				})
				inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) {
					if policy == "dedupe" {
						s.Dedupe = env.Enabled
					} else {
						s.Hedge = env.HedgeSettings{Enabled: env.Enabled, Delay: env.HedgeDelay{After: time.Millisecond}}
					}
				}))
				ctx, cancel := context.WithTimeout(context.Background(), engineGuard)
				defer cancel()
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL(), strings.NewReader(queryBody))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Connection", "Upgrade")
				req.Header.Set("Upgrade", "echo-test")
				resp, err := inv.Do(ctx, "products", req)
				if err != nil {
					t.Fatalf("upgrade: %v", err)
				}
				rwc, ok := resp.Body.(io.ReadWriteCloser)
				if resp.StatusCode != http.StatusSwitchingProtocols || !ok {
					t.Fatalf("status %d, body %T: want 101 with an io.ReadWriteCloser", resp.StatusCode, resp.Body)
				}
				defer rwc.Close()
				if _, err := io.WriteString(rwc, "ping\n"); err != nil {
					t.Fatalf("write: %v", err)
				}
				if got, err := bufio.NewReader(rwc).ReadString('\n'); err != nil || got != "echo ping\n" {
					t.Fatalf("read %q, %v; want the echo", got, err)
				}
				if n := chance.count(); n != 1 {
					t.Errorf("the source schema got %d requests, want 1", n)
				}
			})
		}
	}
}
