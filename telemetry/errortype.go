package telemetry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"syscall"
)

// ErrorTypeFunc names the kind of a failed source schema request for the
// error.type attribute. It is called only with non-nil errors. Its values
// become metric series, so it must return few distinct ones.
type ErrorTypeFunc func(err error) string

// The values of error.type that DefaultErrorType gives. A 5xx response has
// its status code as error.type ("503"), as the semantic conventions ask.
const (
	ErrorTypeCanceled          = "canceled"
	ErrorTypeTimeout           = "timeout"
	ErrorTypeDNS               = "dns_error"
	ErrorTypeConnectionRefused = "connection_refused"
	ErrorTypeConnectionReset   = "connection_reset"
	ErrorTypeConnectionClosed  = "connection_closed"
	ErrorTypeTLSCertificate    = "tls_certificate_invalid"
	ErrorTypeTLS               = "tls_error"
	// ErrorTypeOther is the semantic conventions' fallback for an error
	// that has nothing better to name it.
	ErrorTypeOther = "_OTHER"
)

// DefaultErrorType is the stock ErrorTypeFunc. It checks, in order: the
// context was canceled; a timeout (a deadline, or a net.Error whose
// Timeout is true, which includes the header timeout of both paths); a DNS
// failure; a refused or reset connection; a connection closed before the
// response ended (io.EOF, io.ErrUnexpectedEOF); a TLS certificate or other
// TLS failure. Otherwise it gives the Go type of the innermost error in the
// chain, such as "*net.OpError", unless that type says nothing (an
// errors.New or fmt.Errorf value): then ErrorTypeOther.
func DefaultErrorType(err error) string {
	var (
		netErr  net.Error
		dnsErr  *net.DNSError
		certErr *tls.CertificateVerificationError
		unkAuth x509.UnknownAuthorityError
		hostErr x509.HostnameError
		invErr  x509.CertificateInvalidError
		recErr  tls.RecordHeaderError
		alert   tls.AlertError
	)
	switch {
	case errors.Is(err, context.Canceled):
		return ErrorTypeCanceled
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return ErrorTypeTimeout
	case errors.As(err, &dnsErr):
		return ErrorTypeDNS
	case errors.Is(err, syscall.ECONNREFUSED):
		return ErrorTypeConnectionRefused
	case errors.Is(err, syscall.ECONNRESET):
		return ErrorTypeConnectionReset
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return ErrorTypeConnectionClosed
	case errors.As(err, &certErr), errors.As(err, &unkAuth), errors.As(err, &hostErr), errors.As(err, &invErr):
		return ErrorTypeTLSCertificate
	case errors.As(err, &recErr), errors.As(err, &alert):
		return ErrorTypeTLS
	}
	return typeName(err)
}

// typeName is the Go type of the innermost error of err's chain, or
// ErrorTypeOther for the types that every package uses for plain messages.
// A joined error (errors.Join) has no single innermost error and is named
// by its own type.
func typeName(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			break
		}
		err = next
	}
	name := fmt.Sprintf("%T", err)
	switch name {
	case "*errors.errorString", "*fmt.wrapError", "*fmt.wrapErrors", "*errors.joinError":
		return ErrorTypeOther
	}
	return name
}

// statusErrorType is error.type for a response: its status code when it is
// a server error, as the semantic conventions ask, else empty.
func statusErrorType(code int) string {
	if code >= 500 && code <= 599 {
		return strconv.Itoa(code)
	}
	return ""
}
