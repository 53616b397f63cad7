package schemas_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/cmd/fusion-transport/internal/corpus"
	"github.com/fusiongo/transport/cmd/fusion-transport/internal/schemas"
	"github.com/fusiongo/transport/compare"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/apqserve"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// TestPersistedQueriesCorpus: the built-in corpus through the transport
// with persisted queries on, over the embedded schemas serving them,
// refusing them, and knowing nothing of them, on every path and engine,
// gets every answer byte for byte as without persisted queries: the first
// run with each text refused by its hash and resent, the second by hash,
// with the schemas restarted (every hash forgotten) halfway through it.
// A schema that refuses them, or has none, turns them off, said once.
func TestPersistedQueriesCorpus(t *testing.T) {
	reqs, err := compare.ReadCorpus(bytes.NewReader(corpus.Builtin))
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []struct {
		name string
		apq  apqserve.Mode
		off  string // the reason persisted queries turn off; "": they stay on
	}{{"on", apqserve.On, ""}, {"not supported", apqserve.NotSupported, "not_supported"}, {"off", apqserve.Off, "no_apq"}} {
		for _, side := range []struct{ path, engine string }{{"legacy", ""}, {"sockets", env.EngineNetHTTP}, {"sockets", env.EngineH1}} {
			t.Run(mode.name+"/"+side.path+side.engine, func(t *testing.T) {
				srv, err := schemas.Start(schemas.Options{APQ: mode.apq})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { srv.Close() })
				plain := corpusInvoker(t, srv.URLs, side.path, side.engine, false, nil)
				want := make([]string, len(reqs))
				for i, r := range reqs {
					want[i] = send(t, plain, r)
				}
				var log logBuffer
				inv := corpusInvoker(t, srv.URLs, side.path, side.engine, true, &log)
				for run := range 2 {
					for i, r := range reqs {
						if run == 1 && i == len(reqs)/2 {
							srv.ForgetPersistedQueries()
						}
						if got := send(t, inv, r); got != want[i] {
							t.Errorf("run %d, %s: with persisted queries\n%s\nwithout\n%s", run+1, r.Name, got, want[i])
						}
					}
				}
				checkPersisted(t, srv, mode.off, log.String())
			})
		}
	}
}

// checkPersisted fails the test unless the schemas served persisted
// queries (off == "") or persisted queries went off for every schema once,
// for off.
func checkPersisted(t *testing.T, srv *schemas.Servers, off, log string) {
	t.Helper()
	if off != "" {
		if n := strings.Count(log, "automatic persisted queries off"); n != len(schemas.Names) || strings.Count(log, "reason="+off) != n {
			t.Errorf("%d log lines say persisted queries are off, want one per schema with reason=%s:\n%s", n, off, log)
		}
		return
	}
	if log != "" {
		t.Errorf("log: %s", log)
	}
	for name, st := range srv.PersistedQueryStats() {
		// Every schema but inventory has texts long enough to go by hash
		// in the corpus; the restart made each refuse again.
		if name != "inventory" && (st.ByHash == 0 || st.NotFound < 2 || st.Registered != st.NotFound) {
			t.Errorf("%s: %+v; want requests by hash, each text refused and registered, again after the restart", name, st)
		}
	}
}

// corpusInvoker is a transport to the schemas at urls on path and engine,
// forwarding Authorization and X-Request-Id, with persisted queries if apq;
// it logs to log, if set, at Warn.
func corpusInvoker(t *testing.T, urls map[string]string, path, engine string, apq bool, log io.Writer) *transport.Transport {
	t.Helper()
	cfg := env.Config{Path: env.Path(path), ForwardHeaders: []string{"Authorization", "X-Request-Id"}, SourceSchemas: map[string]env.SourceSchema{}}
	cfg.Defaults.Engine = engine
	if apq {
		cfg.Defaults.PersistedQueries.Mode = env.PersistedQueriesAPQ
	}
	for name, u := range urls {
		cfg.SourceSchemas[name] = env.SourceSchema{URL: u}
	}
	logger := slog.New(slog.DiscardHandler)
	if log != nil {
		logger = slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	inv, err := transport.New(cfg, transport.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inv.Close() })
	return inv
}

// send posts r's body to its schema on behalf of a gateway request with
// r's headers, and returns the answer's status and body.
func send(t *testing.T, inv *transport.Transport, r compare.Request) string {
	t.Helper()
	gw, _ := http.NewRequest(http.MethodPost, "http://gateway.test/graphql", nil)
	for k, v := range r.Headers {
		gw.Header.Set(k, v)
	}
	resp, err := inv.Post(transport.WithGatewayRequest(context.Background(), gw), r.Schema, r.Body)
	if err != nil {
		t.Fatalf("%s: %v", r.Name, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: %v", r.Name, err)
	}
	return resp.Status + " " + string(b)
}

// logBuffer is a log destination safe for concurrent use.
type logBuffer = wiretest.LogBuffer
