package sockets

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// TestConnectTimeoutCoversTLS: connect_timeout bounds the TLS handshake
// too. The server accepts and never speaks; with tls_handshake_timeout
// and header_timeout off and a caller context without deadline, only
// connect_timeout can end the call.
func TestConnectTimeoutCoversTLS(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		addr := wiretest.SilentListener(t)
		tr := openSchemaWith(t, engineSchema(engine, "https://"+addr+"/graphql", func(s *env.SourceSchema) {
			s.ConnectTimeout = 300 * time.Millisecond
			s.TLSHandshakeTimeout = env.Off
			s.HeaderTimeout = env.Off
			if engine == env.EngineH1 {
				s.HTTPVersion = "1.1" // h1 serves no https schema that could negotiate HTTP/2
			}
		}), func(*backend.Schema) {})
		ctx, cancel := context.WithCancel(context.Background()) // no deadline
		defer cancel()
		done := make(chan error, 1)
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+addr+"/graphql", strings.NewReader(`{"query":"{ ok }"}`))
			resp, err := tr.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(10 * time.Second):
			t.Error("the request still waited for the TLS handshake long after connect_timeout")
			cancel()
			err = <-done
		}
		var ne net.Error
		if !errors.Is(err, context.DeadlineExceeded) && !(errors.As(err, &ne) && ne.Timeout()) {
			t.Errorf("error %v, want a timeout (context.DeadlineExceeded or a net.Error whose Timeout() is true)", err)
		}
		ranOn(t, engine, tr)
	})
}
