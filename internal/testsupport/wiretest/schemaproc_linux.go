package wiretest

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// StartSchemaProcess starts cmd, a process that prints a line "NAME URL"
// per source schema on its standard output (fusion-transport schemas, or
// a test binary serving them), reads n such lines and returns the URLs by
// name. Its standard error is this process's; it gets SIGTERM, and is
// waited for, when t ends, and SIGKILL if this process dies first. The
// benches that keep the source schemas out of the measured process start
// theirs with it.
func StartSchemaProcess(t testing.TB, cmd *exec.Cmd, n int) map[string]string {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	urls := map[string]string{}
	sc := bufio.NewScanner(out)
	for len(urls) < n && sc.Scan() {
		name, u, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			t.Fatalf("schemas: unexpected line %q", sc.Text())
		}
		urls[name] = u
	}
	if len(urls) < n {
		t.Fatalf("schemas: got %v, want %d URLs", urls, n)
	}
	go io.Copy(io.Discard, out)
	return urls
}
