package middleware

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/fusiongo/transport/internal/redact"
	"github.com/fusiongo/transport/internal/sharekey"
)

// RequestLog returns a middleware that writes one record per source schema
// request to l, with the attribute source_schema=schema: at Debug with the
// method, URL, status and duration until the response headers arrived; at
// Warn, with the error instead of the status, when the request failed. A
// request that failed because its own context was cancelled is logged at
// Debug: the caller left, the source schema did not fail. A dedupe key
// probe (IsKeyProbe) sends nothing and is not logged.
//
// Headers and bodies are never logged, and the URL loses its password,
// query and fragment (a GraphQL GET request carries its variables in the
// query), so that no credentials or user data reach the logs. A nil l is
// slog.Default().
func RequestLog(l *slog.Logger, schema string) Middleware {
	if l == nil {
		l = slog.Default()
	}
	l = l.With(slog.String("source_schema", schema))
	return func(next http.RoundTripper) http.RoundTripper {
		return &requestLogger{wrapped: wrap(next), log: l}
	}
}

// requestLogger is the RoundTripper of RequestLog.
type requestLogger struct {
	wrapped
	log *slog.Logger
}

var _ http.RoundTripper = (*requestLogger)(nil)

// RoundTrip sends req and logs how it went.
func (t *requestLogger) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if sharekey.IsProbe(ctx) {
		return t.next.RoundTrip(req)
	}
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	elapsed := time.Since(start)

	level := slog.LevelDebug
	if err != nil && !(errors.Is(err, context.Canceled) && ctx.Err() != nil) {
		level = slog.LevelWarn
	}
	if !t.log.Enabled(ctx, level) {
		return resp, err
	}
	attrs := []slog.Attr{
		slog.String("method", req.Method),
		slog.String("url", redact.Request(req.URL)),
		slog.Duration("duration", elapsed),
	}
	msg := "source schema request"
	if err != nil {
		msg = "source schema request failed"
		attrs = append(attrs, slog.String("error", err.Error()))
	} else {
		attrs = append(attrs, slog.Int("status", resp.StatusCode))
	}
	t.log.LogAttrs(ctx, level, msg, attrs...)
	return resp, err
}
