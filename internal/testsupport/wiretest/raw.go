package wiretest

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
)

// RawServer is a loopback TCP server whose connections a test handles
// byte by byte. It records how each connection ended.
type RawServer struct {
	// URL is the source schema URL: http://host:port/graphql.
	URL string
	// Closed receives the remote address of each connection the client
	// closed (EOF or reset seen). It has room for 1,024; a test that opens
	// more drains it.
	Closed chan string
	ln     net.Listener
	wg     sync.WaitGroup
}

// NewRawServer serves every connection with handle, which returns when it
// is done with the connection; the server then reads until the client
// closes it, and reports the close on Closed. It stops when the test ends.
func NewRawServer(t testing.TB, handle func(c net.Conn, br *bufio.Reader)) *RawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &RawServer{ln: ln, URL: "http://" + ln.Addr().String() + "/graphql", Closed: make(chan string, 1024)}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Go(func() {
				defer c.Close()
				br := bufio.NewReader(c)
				handle(c, br)
				io.Copy(io.Discard, br) // until the client closes
				s.Closed <- c.RemoteAddr().String()
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		s.wg.Wait()
	})
	return s
}

// ReadRequest reads one request and its body from br.
func ReadRequest(br *bufio.Reader) (*http.Request, error) {
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, err
	}
	_, err = io.Copy(io.Discard, req.Body)
	return req, err
}
