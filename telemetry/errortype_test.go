package telemetry_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/fusiongo/transport/internal/testsupport/wiretest"
	"github.com/fusiongo/transport/telemetry"
)

// timeoutError is a net.Error that reports a timeout, as the paths' header
// timeout error does.
type timeoutError struct{}

func (timeoutError) Error() string   { return "no response headers within 1s" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return false }

// schemaError is a package's own error type without a known kind.
type schemaError struct{}

func (*schemaError) Error() string { return "bad schema" }

func TestDefaultErrorType(t *testing.T) {
	dial := func(err error) error {
		return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", err)}
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"canceled", fmt.Errorf("source schema %q: %w", "x", context.Canceled), telemetry.ErrorTypeCanceled},
		{"deadline", context.DeadlineExceeded, telemetry.ErrorTypeTimeout},
		{"net.Error timeout", fmt.Errorf("wrapped: %w", timeoutError{}), telemetry.ErrorTypeTimeout},
		{"DNS", &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "products"}}, telemetry.ErrorTypeDNS},
		{"refused", dial(syscall.ECONNREFUSED), telemetry.ErrorTypeConnectionRefused},
		{"reset", &net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, telemetry.ErrorTypeConnectionReset},
		{"EOF", io.EOF, telemetry.ErrorTypeConnectionClosed},
		{"unexpected EOF", fmt.Errorf("body: %w", io.ErrUnexpectedEOF), telemetry.ErrorTypeConnectionClosed},
		{"certificate", &tls.CertificateVerificationError{Err: errors.New("x509: unknown authority")}, telemetry.ErrorTypeTLSCertificate},
		{"TLS alert", tls.AlertError(40), telemetry.ErrorTypeTLS},
		{"own type", fmt.Errorf("wrapped: %w", &schemaError{}), "*telemetry_test.schemaError"},
		{"plain message", errors.New("something broke"), telemetry.ErrorTypeOther},
		{"joined", errors.Join(errors.New("a"), errors.New("b")), telemetry.ErrorTypeOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := telemetry.DefaultErrorType(tt.err); got != tt.want {
				t.Errorf("DefaultErrorType(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

func TestOptionsErrorType(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(context.Background())
	var got []error
	tel, err := telemetry.New(telemetry.Options{
		TracerProvider: tp,
		ErrorType: func(err error) string {
			got = append(got, err)
			return "upstream_down"
		},
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	cause := errors.New("dial failed")
	rt := tel.Middleware("products", "sockets")(wiretest.RoundTripFunc(func(*http.Request) (*http.Response, error) { return nil, cause }))
	req, _ := http.NewRequest(http.MethodPost, "http://products.invalid/graphql", nil)
	if _, err := rt.RoundTrip(req); !errors.Is(err, cause) {
		t.Fatalf("RoundTrip error = %v, want %v itself", err, cause)
	}
	if len(got) != 1 || got[0] != cause {
		t.Errorf("ErrorType called with %v, want [%v]", got, cause)
	}
	ended := spans.Ended()
	if len(ended) != 1 {
		t.Fatalf("%d spans ended, want 1", len(ended))
	}
	if v := attrs(ended[0].Attributes())["error.type"]; v != "upstream_down" {
		t.Errorf("error.type = %q, want %q", v, "upstream_down")
	}
}
