package sockets_test

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
	"github.com/fusiongo/transport/sockets"
)

// lockedBuffer is a log destination safe for concurrent writes.
type lockedBuffer = wiretest.LogBuffer

// TestSecretsStayOut: a password in the schema's URL and in its proxy URL
// appears in no error of New or RoundTrip and in no log line, whatever
// fails: a refused setting, a wrong target, a proxy that cannot be reached,
// a bad setting value.
func TestSecretsStayOut(t *testing.T) {
	const urlSecret, proxySecret = "url-s3cret", "proxy-s3cret"
	target := "http://gateway:" + urlSecret + "@127.0.0.1:1/graphql"
	var logs lockedBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var errs []error
	for _, s := range []env.Settings{
		{Retry: env.RetrySettings{MaxAttempts: 2}},          // refused: the request path's
		{Proxy: "http://p:" + proxySecret + "@127.0.0.1:1"}, // unreachable proxy
		{Proxy: "ftp://p:" + proxySecret + "@127.0.0.1:1"},  // a bad value
		{ConnectTimeout: 50 * time.Millisecond},             // nothing listens
	} {
		rt, err := sockets.New(sockets.Config{URL: target, Settings: s, Logger: logger})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, u := range []string{target, "http://gateway:" + urlSecret + "@127.0.0.1:2/graphql"} { // the second: wrong target
			req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(`{}`))
			if resp, err := rt.RoundTrip(req); err == nil {
				resp.Body.Close()
				t.Errorf("%s: a call succeeded with nothing listening", u)
			} else {
				errs = append(errs, err)
			}
		}
		rt.Close()
	}
	for _, err := range errs {
		t.Log(err)
	}
	if len(errs) < 6 {
		t.Fatalf("%d errors to look at, want at least 6: %v", len(errs), errs)
	}
	for _, err := range errs {
		for _, secret := range []string{urlSecret, proxySecret} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error shows a secret: %v", err)
			}
		}
	}
	for _, secret := range []string{urlSecret, proxySecret} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("log shows a secret:\n%s", logs.String())
		}
	}
}
