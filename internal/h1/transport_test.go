package h1

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// rawServer serves each connection by reading a request head and writing
// resp, then closing.
func rawServer(t *testing.T, resp string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil || line == "\r\n" {
						break
					}
				}
				io.WriteString(c, resp)
			}()
		}
	}()
	return "http://" + ln.Addr().String() + "/"
}

// viaTransport fetches from a raw server writing in with a real
// http.Transport bounded to maxHeader bytes, and returns the status and
// body or the error.
func viaTransport(t *testing.T, in string, maxHeader int64) (string, error) {
	url := rawServer(t, in)
	tr := &http.Transport{MaxResponseHeaderBytes: maxHeader, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d %s", resp.StatusCode, b), nil
}

func viaH1(in string, maxHeader int64) (string, error) {
	resp, err := ReadResponse(bufio.NewReader(strings.NewReader(in)), nil, maxHeader, nil)
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d %s", resp.StatusCode, b), nil
}

// TestInterimAndHeaderBound compares the 1xx loop and the header-byte
// bound with a real http.Transport reading the same bytes from a
// loopback server: the bound covers the interim and final heads together,
// is inclusive, and there is no separate count of 1xx responses.
func TestInterimAndHeaderBound(t *testing.T) {
	const final = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"
	const finalHead = len(final) - 2
	const cont = "HTTP/1.1 100 Continue\r\n\r\n"
	const early = "HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n"
	many := strings.Repeat("HTTP/1.1 102 Processing\r\n\r\n", 200)
	for _, tt := range []struct {
		name string
		in   string
		max  int64
	}{
		{"final only, bound exact", final, int64(finalHead)},
		{"final only, one byte over", final, int64(finalHead - 1)},
		{"100 and final, bound exact", cont + final, int64(len(cont) + finalHead)},
		{"100 and final, one byte over", cont + final, int64(len(cont) + finalHead - 1)},
		{"103 and 100 and final", early + cont + final, 4096},
		{"200 interim responses", many + final, 1 << 20},
		{"200 interim responses over the bound", many + final, int64(len(many))},
		{"101 is final", "HTTP/1.1 101 Switching Protocols\r\n\r\n", 4096},
		{"bare LF interim", "HTTP/1.1 100 Continue\n\n" + final, 4096},
		{"malformed interim", "HTTP/1.1 100 Continue\r\nContent-Length: x\r\n\r\n" + final, 4096},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want, werr := viaTransport(t, tt.in, tt.max)
			got, gerr := viaH1(tt.in, tt.max)
			if (werr != nil) != (gerr != nil) || got != want {
				t.Fatalf("h1: %q, %v; Transport: %q, %v", got, gerr, want, werr)
			}
			if werr != nil && strings.Contains(werr.Error(), "exceeded") != strings.Contains(gerr.Error(), "exceeded") {
				t.Errorf("h1 error %q, Transport error %q", gerr, werr)
			}
		})
	}
}
