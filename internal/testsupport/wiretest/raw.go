package wiretest

import (
	"bufio"
	"fmt"
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

// NewStrayServer answers each request with its own answer, and in the same
// write, right after it, with bytes nobody asked for: a whole second
// response (kind "response"), or bytes past a Content-Length that is too
// short (kind "overrun"). The answer's body echoes the request's X-Call
// header, {"data":{"call":"<X-Call>"}}, so a caller can tell its own
// answer from another's; the stray one says "stray".
func NewStrayServer(t testing.TB, kind string) *RawServer {
	return NewRawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, err := ReadRequest(br)
			if err != nil {
				return
			}
			body := `{"data":{"call":"` + req.Header.Get("X-Call") + `"}}`
			answer := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			stray := `{"data":{"call":"stray"}}`
			switch kind {
			case "response":
				answer += fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(stray), stray)
			case "overrun":
				answer = fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body+"HTTP/1.1 200 OK\r\nContent-Length: "+fmt.Sprint(len(stray))+"\r\n\r\n"+stray)
			}
			if _, err := io.WriteString(c, answer); err != nil {
				return
			}
		}
	})
}
