package middleware_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/fusiongo/transport/middleware"
)

func TestRequestLog(t *testing.T) {
	errRefused := errors.New("connection refused")
	tests := []struct {
		name   string
		next   func(*http.Request) (*http.Response, error)
		cancel bool // the caller's context is cancelled
		want   []string
	}{
		{
			name: "success",
			next: func(req *http.Request) (*http.Response, error) {
				resp, _ := fakeResponse(req, 200, `{"data":{"secret":"body"}}`)
				resp.Header.Set("Set-Cookie", "session=secret")
				return resp, nil
			},
			want: []string{"level=DEBUG", `msg="source schema request"`, "source_schema=products", "method=POST", "url=http://products.internal/graphql", "status=200", "duration="},
		},
		{
			name: "failure",
			next: func(*http.Request) (*http.Response, error) { return nil, errRefused },
			want: []string{"level=WARN", `msg="source schema request failed"`, "source_schema=products", `error="connection refused"`},
		},
		{
			name: "caller left",
			next: func(req *http.Request) (*http.Response, error) {
				return nil, req.Context().Err()
			},
			cancel: true,
			want:   []string{"level=DEBUG", `msg="source schema request failed"`, `error="context canceled"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
			rt := middleware.Chain(roundTripFunc(tt.next), middleware.RequestLog(l, "products"))
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tt.cancel {
				cancel()
			}
			req := newRequest(t, ctx, "http://user:secret@products.internal/graphql?variables=secret#secret", `{"query":"{ secret }"}`, true)
			req.Header.Set("Authorization", "Bearer secret")
			req.Header.Set("Cookie", "session=secret")
			resp, err := rt.RoundTrip(req)
			if err == nil {
				readBody(t, resp)
			}

			line := buf.String()
			if n := strings.Count(line, "\n"); n != 1 {
				t.Errorf("%d log lines, want 1:\n%s", n, line)
			}
			for _, w := range tt.want {
				if !strings.Contains(line, w) {
					t.Errorf("log line lacks %q:\n%s", w, line)
				}
			}
			if strings.Contains(line, "secret") {
				t.Errorf("log line leaks a secret:\n%s", line)
			}
		})
	}
}

func TestRequestLogLevel(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	next := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, _ := fakeResponse(req, 200, "ok")
		return resp, nil
	})
	resp, err := middleware.Chain(next, middleware.RequestLog(l, "products")).RoundTrip(newRequest(t, t.Context(), "http://products.internal/graphql", queryBody, true))
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	if buf.Len() != 0 {
		t.Errorf("logged below the handler's level:\n%s", buf.String())
	}
}
