// Package testpki makes a throw-away public key infrastructure for tests: a
// certificate authority, server certificates and client certificates, all
// ECDSA P-256, valid from an hour ago to an hour from now, generated in
// memory and written as PEM files where a configuration needs paths
// (tls.ca_file, tls.cert_file, tls.key_file).
//
//	pki := testpki.New(t, t.TempDir())
//	srv.TLS = pki.ServerConfig(t, "127.0.0.1")          // demands a client certificate
//	cert, key := pki.ClientFiles(t, "gateway")          // for tls.cert_file, tls.key_file
//	cfg.Defaults.TLS.CAFile = pki.CAFile
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// validity is how long every certificate is valid; it starts an hour in
// the past so that a clock a little behind does not reject it.
const validity = time.Hour

// PKI is a certificate authority for one test. It is safe for concurrent
// use.
type PKI struct {
	// Dir is where the PEM files are written.
	Dir string
	// CAFile is the PEM file of the CA certificate, for tls.ca_file.
	CAFile string
	// CA is the CA certificate.
	CA *x509.Certificate
	// Pool holds the CA certificate alone: a server's ClientCAs or a
	// client's RootCAs.
	Pool *x509.CertPool

	key *ecdsa.PrivateKey
	seq atomic.Int64
}

// New makes a CA named "fusion test CA" and writes its certificate to
// dir/ca.pem. An empty dir means t.TempDir().
func New(t testing.TB, dir string) *PKI {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: "fusion test CA", Organization: []string{"fusiongo transport tests"}},
		NotBefore:             time.Now().Add(-validity),
		NotAfter:              time.Now().Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("testpki: CA certificate: %v", err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("testpki: CA certificate: %v", err)
	}
	p := &PKI{Dir: dir, CA: ca, Pool: x509.NewCertPool(), key: key}
	p.Pool.AddCert(ca)
	p.CAFile = p.write(t, "ca.pem", pemBlock("CERTIFICATE", der))
	return p
}

// Server returns a server certificate signed by the CA for names: each is
// an IP address or a DNS name. The first name is also the common name.
func (p *PKI) Server(t testing.TB, names ...string) tls.Certificate {
	t.Helper()
	cert, _, _ := p.issue(t, names, x509.ExtKeyUsageServerAuth)
	return cert
}

// ServerFiles is Server, written to PEM files: the certificate and its key.
func (p *PKI) ServerFiles(t testing.TB, names ...string) (certFile, keyFile string) {
	t.Helper()
	_, certPEM, keyPEM := p.issue(t, names, x509.ExtKeyUsageServerAuth)
	return p.writePair(t, "server", certPEM, keyPEM)
}

// Client returns a client certificate signed by the CA with common name cn.
func (p *PKI) Client(t testing.TB, cn string) tls.Certificate {
	t.Helper()
	cert, _, _ := p.issue(t, []string{cn}, x509.ExtKeyUsageClientAuth)
	return cert
}

// ClientFiles is Client, written to PEM files: the certificate and its key,
// for tls.cert_file and tls.key_file.
func (p *PKI) ClientFiles(t testing.TB, cn string) (certFile, keyFile string) {
	t.Helper()
	_, certPEM, keyPEM := p.issue(t, []string{cn}, x509.ExtKeyUsageClientAuth)
	return p.writePair(t, "client", certPEM, keyPEM)
}

// ServerConfig is a server's TLS configuration with a certificate for
// names that demands a client certificate signed by the CA
// (tls.RequireAndVerifyClientCert).
func (p *PKI) ServerConfig(t testing.TB, names ...string) *tls.Config {
	t.Helper()
	return &tls.Config{
		Certificates: []tls.Certificate{p.Server(t, names...)},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    p.Pool,
	}
}

// SelfSigned returns a certificate for names that no CA signed: a client
// that verifies rejects it.
func SelfSigned(t testing.TB, names ...string) tls.Certificate {
	t.Helper()
	key := newKey(t)
	tmpl := leafTemplate(t, names, x509.ExtKeyUsageServerAuth)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("testpki: self-signed certificate: %v", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// issue signs a leaf certificate for names.
func (p *PKI) issue(t testing.TB, names []string, usage x509.ExtKeyUsage) (cert tls.Certificate, certPEM, keyPEM []byte) {
	t.Helper()
	key := newKey(t)
	der, err := x509.CreateCertificate(rand.Reader, leafTemplate(t, names, usage), p.CA, &key.PublicKey, p.key)
	if err != nil {
		t.Fatalf("testpki: certificate for %v: %v", names, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("testpki: key: %v", err)
	}
	leaf, _ := x509.ParseCertificate(der)
	cert = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
	return cert, pemBlock("CERTIFICATE", der), pemBlock("PRIVATE KEY", keyDER)
}

func leafTemplate(t testing.TB, names []string, usage x509.ExtKeyUsage) *x509.Certificate {
	t.Helper()
	if len(names) == 0 {
		t.Fatal("testpki: a certificate needs at least one name")
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: names[0]},
		NotBefore:    time.Now().Add(-validity),
		NotAfter:     time.Now().Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	if usage == x509.ExtKeyUsageServerAuth {
		for _, n := range names {
			if ip := net.ParseIP(n); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, n)
			}
		}
	}
	return tmpl
}

func (p *PKI) writePair(t testing.TB, kind string, certPEM, keyPEM []byte) (certFile, keyFile string) {
	t.Helper()
	n := p.seq.Add(1)
	certFile = p.write(t, fmt.Sprintf("%s-%d.pem", kind, n), certPEM)
	keyFile = p.write(t, fmt.Sprintf("%s-%d-key.pem", kind, n), keyPEM)
	return certFile, keyFile
}

func (p *PKI) write(t testing.TB, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(p.Dir, name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatalf("testpki: %v", err)
	}
	return path
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("testpki: key: %v", err)
	}
	return key
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		t.Fatalf("testpki: serial: %v", err)
	}
	return n
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
