package testpki_test

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"testing"

	"github.com/fusiongo/transport/internal/testsupport/testpki"
)

// TestChains: the certificates verify against the CA for their names and
// uses, the files load as key pairs, and a self-signed certificate does not
// verify.
func TestChains(t *testing.T) {
	pki := testpki.New(t, "")
	verify := func(cert tls.Certificate, opts x509.VerifyOptions) error {
		leaf, err := x509.ParseCertificate(cert.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		opts.Roots = pki.Pool
		_, err = leaf.Verify(opts)
		return err
	}
	server := pki.Server(t, "127.0.0.1", "products.internal")
	for _, name := range []string{"127.0.0.1", "products.internal"} {
		if err := verify(server, x509.VerifyOptions{DNSName: name}); err != nil {
			t.Errorf("server certificate for %s: %v", name, err)
		}
	}
	if err := verify(server, x509.VerifyOptions{DNSName: "reviews.internal"}); err == nil {
		t.Error("server certificate verified for a name it does not hold")
	}
	client := pki.Client(t, "gateway")
	if err := verify(client, x509.VerifyOptions{KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}
	if err := verify(testpki.SelfSigned(t, "127.0.0.1"), x509.VerifyOptions{DNSName: "127.0.0.1"}); err == nil {
		t.Error("a self-signed certificate verified against the CA")
	}
	certFile, keyFile := pki.ClientFiles(t, "gateway")
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		t.Errorf("client files: %v", err)
	}
	certFile, keyFile = pki.ServerFiles(t, "127.0.0.1")
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		t.Errorf("server files: %v", err)
	}
	if pool := x509.NewCertPool(); pki.CAFile == "" || !appendFile(t, pool, pki.CAFile) {
		t.Errorf("CAFile %q holds no PEM certificate", pki.CAFile)
	}
}

func appendFile(t *testing.T, pool *x509.CertPool, path string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return pool.AppendCertsFromPEM(b)
}
