package wiretest_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

const importPath = "github.com/fusiongo/transport/internal/testsupport/wiretest"

// guard bounds every wait of these tests, so that a broken server fails
// them instead of hanging them; no test asserts on it.
const guard = 10 * time.Second

// TestServerRecords: what a client sends reaches the record as the server
// saw it (method, path, body, protocol, TLS, remote address), the handler
// still reads the body, and the connection's opening and closing are
// reported under the client's address.
func TestServerRecords(t *testing.T) {
	echo := func(w http.ResponseWriter, r *http.Request) { io.Copy(w, r.Body) }
	cases := []struct {
		name      string
		opts      wiretest.Options
		protocols func(*http.Protocols)
		wantProto int
	}{
		{"HTTP/1.1", wiretest.Options{Handler: echo}, func(p *http.Protocols) { p.SetHTTP1(true) }, 1},
		{"h2c only", wiretest.Options{Handler: echo, H2COnly: true}, func(p *http.Protocols) { p.SetUnencryptedHTTP2(true) }, 2},
		{"TLS with h2", wiretest.Options{Handler: echo, TLS: &tls.Config{}, ALPN: []string{"h2"}}, func(p *http.Protocols) { p.SetHTTP2(true) }, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := wiretest.NewServer(t, c.opts)
			if want := srv.URL + "/graphql"; srv.SchemaURL() != want {
				t.Errorf("SchemaURL() = %q, want %q", srv.SchemaURL(), want)
			}
			var mu sync.Mutex
			var local []string
			tr := srv.Client().Transport.(*http.Transport).Clone()
			tr.Protocols = new(http.Protocols)
			c.protocols(tr.Protocols)
			tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				var d net.Dialer
				conn, err := d.DialContext(ctx, network, addr)
				if err == nil {
					mu.Lock()
					local = append(local, conn.LocalAddr().String())
					mu.Unlock()
				}
				return conn, err
			}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr}).Post(srv.URL+"/graphql/products?x=1", "application/json", strings.NewReader(`{"query":"{ ok }"}`))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != `{"query":"{ ok }"}` {
				t.Errorf("the handler read %q, want the request's body", body)
			}
			got := srv.Last(t)
			mu.Lock()
			dialled := slices.Clone(local)
			mu.Unlock()
			if len(dialled) != 1 {
				t.Fatalf("the client dialled %d connections, want 1", len(dialled))
			}
			want := wiretest.Request{Method: "POST", Path: "/graphql/products", Body: `{"query":"{ ok }"}`, ProtoMajor: c.wantProto, RequestURI: "/graphql/products?x=1", Host: srv.Listener.Addr().String(), Remote: dialled[0]}
			if got.Method != want.Method || got.Path != want.Path || got.Body != want.Body || got.ProtoMajor != want.ProtoMajor || got.Host != want.Host || got.Remote != want.Remote || got.RequestURI != want.RequestURI {
				t.Errorf("server saw %+v, want %+v", got, want)
			}
			if (got.TLS != nil) != (c.opts.TLS != nil) {
				t.Errorf("server saw TLS state %v, want one only over TLS", got.TLS)
			}
			if got.Header.Get("Content-Type") != "application/json" {
				t.Errorf("server saw headers %v", got.Header)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("Requests() has %d, want 1", n)
			}
			if opened := srv.Opened(); !slices.Equal(opened, dialled) {
				t.Errorf("Opened() = %v, want the client's %v", opened, dialled)
			}
			tr.CloseIdleConnections()
			ctx, cancel := context.WithTimeout(context.Background(), guard)
			defer cancel()
			srv.WaitClosed(t, ctx, dialled[0])
		})
	}
}

// TestServerSchemaURL: Options.URL names the source schema URL instead of
// the server's own.
func TestServerSchemaURL(t *testing.T) {
	srv := wiretest.NewServer(t, wiretest.Options{URL: "http://products.internal/graphql"})
	if got := srv.SchemaURL(); got != "http://products.internal/graphql" {
		t.Errorf("SchemaURL() = %q", got)
	}
}

// h2Frame returns the bytes of one HTTP/2 frame.
func h2Frame(typ, flags byte, stream uint32, payload []byte) []byte {
	n := len(payload)
	b := []byte{byte(n >> 16), byte(n >> 8), byte(n), typ, flags, byte(stream >> 24), byte(stream >> 16), byte(stream >> 8), byte(stream)}
	return append(b, payload...)
}

// TestFrameReaderSeesPing: a client's preface and frames, written a few
// bytes at a time, reach the reader whole; a PING that is not an ACK is
// reported, and kept from the reader only when the listener drops PINGs.
func TestFrameReaderSeesPing(t *testing.T) {
	const preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	settings := h2Frame(0x4, 0, 0, nil)
	ping := h2Frame(0x6, 0, 0, []byte("12345678"))
	pingAck := h2Frame(0x6, 0x1, 0, []byte("87654321"))
	headers := h2Frame(0x1, 0x4, 1, []byte{0x82})
	in := slices.Concat([]byte(preface), settings, ping, pingAck, headers)
	cases := []struct {
		name      string
		drop      bool
		wantRead  []byte
		wantPings int
	}{
		{"PINGs pass", false, in, 1},
		{"PINGs dropped", true, slices.Concat([]byte(preface), settings, pingAck, headers), 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			client, server := net.Pipe()
			pl := &wiretest.PingListener{Listener: oneConn{server}, Pings: make(chan struct{}, 4), Drop: c.drop}
			conn, err := pl.Accept()
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				for b := in; len(b) > 0; {
					n := min(5, len(b))
					client.Write(b[:n])
					b = b[n:]
				}
				client.Close()
			}()
			got, err := io.ReadAll(conn)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, c.wantRead) {
				t.Errorf("the server read\n%q\nwant\n%q", got, c.wantRead)
			}
			if n := len(pl.Pings); n != c.wantPings {
				t.Errorf("%d PINGs reported, want %d", n, c.wantPings)
			}
		})
	}
	t.Run("Frame", func(t *testing.T) {
		client, server := net.Pipe()
		var frames []wiretest.Frame
		fr := &wiretest.FrameReader{Conn: server, Filter: func(f wiretest.Frame) bool {
			frames = append(frames, f)
			return true
		}}
		go func() {
			client.Write(slices.Concat([]byte(preface), headers, ping))
			client.Close()
		}()
		io.ReadAll(fr)
		want := []wiretest.Frame{{Length: 1, Type: 0x1, Flags: 0x4, Stream: 1}, {Length: 8, Type: 0x6}}
		if !slices.Equal(frames, want) || frames[0].IsPing() || !frames[1].IsPing() {
			t.Errorf("Filter saw %+v, want %+v with only the second a PING", frames, want)
		}
	})
}

// oneConn is a listener that hands out one connection.
type oneConn struct{ c net.Conn }

func (l oneConn) Accept() (net.Conn, error) { return l.c, nil }
func (l oneConn) Close() error              { return nil }
func (l oneConn) Addr() net.Addr            { return l.c.LocalAddr() }

// TestPingServer: an HTTP/2 client's PING reaches a NewPingServer, which
// answers it unless PINGs are dropped. The client sends a request after
// the PING: the server handles frames in order and writes a PING's ACK
// ahead of any response, so the response's HEADERS end the wait.
func TestPingServer(t *testing.T) {
	for _, drop := range []bool{false, true} {
		t.Run("drop="+strconv.FormatBool(drop), func(t *testing.T) {
			srv, pl := wiretest.NewPingServer(t, drop)
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(guard))
			io.WriteString(conn, http2.ClientPreface)
			fr := http2.NewFramer(conn, conn)
			fr.WriteSettings()
			fr.WritePing(false, [8]byte{'p', 'i', 'n', 'g'})
			var block bytes.Buffer
			enc := hpack.NewEncoder(&block)
			for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "products.internal"}, {":path", "/graphql"}} {
				enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
			}
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes(), EndStream: true, EndHeaders: true})
			answered := false
			for responded := false; !responded; {
				f, err := fr.ReadFrame()
				if err != nil {
					t.Fatalf("reading the server's frames: %v", err)
				}
				switch f := f.(type) {
				case *http2.PingFrame:
					answered = answered || (f.IsAck() && f.Data == [8]byte{'p', 'i', 'n', 'g'})
				case *http2.HeadersFrame:
					responded = f.StreamID == 1
				}
			}
			if answered == drop {
				t.Errorf("the server answered the PING: %v, want %v", answered, !drop)
			}
			select {
			case <-pl.Pings:
			default:
				t.Error("the PING was not reported on Pings")
			}
			if got := srv.Last(t); got.ProtoMajor != 2 || got.Host != "products.internal" {
				t.Errorf("server saw %+v, want an HTTP/2 request for products.internal", got)
			}
		})
	}
}

// TestOnClose: the hook runs once, at the first Close.
func TestOnClose(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	n := 0
	c := wiretest.OnClose(a, func() { n++ })
	c.Close()
	c.Close()
	if n != 1 {
		t.Errorf("the hook ran %d times, want 1", n)
	}
	if _, err := a.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("write after Close: %v, want the connection closed", err)
	}
}

// importers returns the non-test Go files below root that import
// wiretest.
func importers(root string) ([]string, error) {
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == importPath {
				found = append(found, path)
			}
		}
		return nil
	})
	return found, err
}

// moduleRoot returns the directory of the go.mod above the test's.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// TestOnlyTestsImport: no non-test file of the module imports wiretest.
// The control, a tree with one such file, shows that the check finds it.
func TestOnlyTestsImport(t *testing.T) {
	control := t.TempDir()
	files := map[string]string{
		"a/a.go":      "package a\n\nimport _ \"" + importPath + "\"\n",
		"a/a_test.go": "package a\n\nimport _ \"" + importPath + "\"\n",
		"b/b.go":      "package b\n\nimport _ \"net/http\"\n",
	}
	for name, text := range files {
		p := filepath.Join(control, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := importers(control); err != nil || !slices.Equal(got, []string{filepath.Join(control, "a/a.go")}) {
		t.Fatalf("the control found %q (%v), want only a/a.go", got, err)
	}

	got, err := importers(moduleRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > 0 {
		t.Errorf("%s is for tests only, yet non-test files import it: %s", importPath, strings.Join(got, ", "))
	}
}
