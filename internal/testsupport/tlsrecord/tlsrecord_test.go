package tlsrecord_test

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/fusiongo/transport/internal/testsupport/testpki"
	"github.com/fusiongo/transport/internal/testsupport/tlsrecord"
)

// TestSealerRecordsReachTheClient: after a TLS 1.3 handshake and one
// answer, records the Sealer makes (a session ticket, an empty record,
// application data) open at the client's crypto/tls, which hands it only
// the data.
func TestSealerRecordsReachTheClient(t *testing.T) {
	pki := testpki.New(t, t.TempDir())
	cli, srv := net.Pipe()
	defer cli.Close()
	var keylog strings.Builder
	tap := &tlsrecord.Tap{Conn: srv}
	server := tls.Server(tap, &tls.Config{Certificates: []tls.Certificate{pki.Server(t, "127.0.0.1")}, MinVersion: tls.VersionTLS13, KeyLogWriter: &keylog})
	client := tls.Client(cli, &tls.Config{RootCAs: pki.Pool, ServerName: "127.0.0.1"})
	done := make(chan error, 1)
	go func() {
		defer srv.Close()
		if _, err := server.Write([]byte("first\n")); err != nil {
			done <- err
			return
		}
		sealer, err := tlsrecord.NewSealer(keylog.String(), server.ConnectionState().CipherSuite, tap.Written())
		if err != nil {
			done <- err
			return
		}
		for _, rec := range [][]byte{
			sealer.Seal(tlsrecord.TypeHandshake, tlsrecord.NewSessionTicket()),
			sealer.Seal(tlsrecord.TypeApplicationData, nil),
			sealer.Seal(tlsrecord.TypeApplicationData, []byte("sealed\n")),
		} {
			if _, err := srv.Write(rec); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	br := bufio.NewReader(client)
	for _, want := range []string{"first\n", "sealed\n"} {
		line, err := br.ReadString('\n')
		if err != nil || line != want {
			t.Fatalf("client read %q, %v; want %q", line, err, want)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := br.ReadByte(); err != io.EOF && err != io.ErrUnexpectedEOF {
		t.Errorf("after the sealed records: %v, want the end of the connection", err)
	}
}
