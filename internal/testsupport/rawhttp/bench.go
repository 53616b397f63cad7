package rawhttp

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// Bench is a benchmark's Responder in a child process of the test binary,
// so that RUSAGE_SELF counts the client alone (Measure reports both
// sides), or, where no child can start and the benchmark allows it, in the
// benchmark's own process. BenchmarkCall (the root) and BenchmarkPeers
// (e2e) share it.
//
// The child is the same test binary running childTest, a test whose body
// is ServeChild: it prints "addr=host:port", answers each "cpu" line on
// its input with "cpu=<ns>", its CPU time so far, and exits at the end of
// its input.
type Bench struct {
	// Addr is the responder's host:port; URL is "http://" + Addr.
	Addr, URL string

	child  *exec.Cmd // nil: the responder runs in this process
	stdin  io.WriteCloser
	stdout *bufio.Reader
}

// StartBench starts the responder of answer in a child process running
// childTest with env=1 in its environment, and stops it when b ends. If
// the child cannot start, it fails b, or, with inProcess, logs why and
// runs the responder in this process (Measure then reports cpu-ns/op of
// both sides together).
func StartBench(b *testing.B, childTest, env string, answer []byte, inProcess bool) *Bench {
	b.Helper()
	s, err := startChild(childTest, env)
	if err == nil {
		b.Cleanup(func() {
			s.stdin.Close() // the child exits at the end of its input
			s.child.Wait()
		})
		return s
	}
	if !inProcess {
		b.Fatal(err)
	}
	b.Logf("responder in this process (cpu-ns/op includes it): %v", err)
	r, err := Start(answer)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	return &Bench{Addr: r.Addr(), URL: r.URL()}
}

func startChild(childTest, env string) (*Bench, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "-test.run=^"+childTest+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Bench{child: cmd, stdin: stdin, stdout: bufio.NewReader(stdout)}
	// The child's first line of its own is its address.
	for {
		line, err := s.stdout.ReadString('\n')
		if err != nil {
			stdin.Close()
			cmd.Wait()
			return nil, fmt.Errorf("responder process: %w", err)
		}
		if addr, ok := strings.CutPrefix(strings.TrimSpace(line), "addr="); ok {
			s.Addr, s.URL = addr, "http://"+addr
			return s, nil
		}
	}
}

// cpu returns the child's CPU time so far; 0 for an in-process responder.
func (s *Bench) cpu(b *testing.B) int64 {
	if s.child == nil {
		return 0
	}
	if _, err := io.WriteString(s.stdin, "cpu\n"); err != nil {
		b.Fatalf("responder process: %v", err)
	}
	line, err := s.stdout.ReadString('\n')
	if err != nil {
		b.Fatalf("responder process: %v", err)
	}
	ns, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(line), "cpu="), 10, 64)
	if err != nil {
		b.Fatalf("responder process: %q: %v", line, err)
	}
	return ns
}

// Measured is what Measure measured, per call.
type Measured struct {
	// ClientCPU is this process's CPU time in nanoseconds; with an
	// in-process responder, both sides'.
	ClientCPU float64
	// Allocs is the heap allocations of this process (runtime.MemStats
	// Mallocs, as the testing package counts allocs/op).
	Allocs float64
}

// Measure runs call warm times, then in a b.Loop, and reports allocations
// and CPU per call: client-cpu-ns/op (this process) and cpu-ns/op (both
// processes), or cpu-ns/op alone with an in-process responder. It returns
// the client's figures, for a benchmark that reports one side's against
// another's of the same run.
func (s *Bench) Measure(b *testing.B, warm int, call func() error) Measured {
	b.Helper()
	for range warm {
		if err := call(); err != nil {
			b.Fatalf("warm-up: %v", err)
		}
	}
	b.ReportAllocs()
	// Each reading outside the others' windows: the responder's CPU
	// (which allocates), the allocations (which stop the world), this
	// process's CPU.
	peer0 := s.cpu(b)
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	mallocs0 := mem.Mallocs
	self0 := CPUTime()
	n := 0
	for b.Loop() {
		if err := call(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	self := CPUTime() - self0
	runtime.ReadMemStats(&mem)
	peer := s.cpu(b) - peer0
	m := Measured{ClientCPU: float64(self) / float64(n), Allocs: float64(mem.Mallocs-mallocs0) / float64(n)}
	if s.child == nil {
		// In-process responder: RUSAGE_SELF holds both sides.
		b.ReportMetric(m.ClientCPU, "cpu-ns/op")
		return m
	}
	b.ReportMetric(m.ClientCPU, "client-cpu-ns/op")
	b.ReportMetric(float64(self+peer)/float64(n), "cpu-ns/op")
	return m
}

// ServeChild is the body of a Bench's child test: it skips unless env is
// "1", else serves answer until its input ends and exits the process
// without returning to the test framework.
func ServeChild(t *testing.T, env string, answer []byte) {
	if os.Getenv(env) != "1" {
		t.Skip("a benchmark's responder process; runs only when the benchmark starts it")
	}
	r, err := Start(answer)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("addr=%s\n", r.Addr())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() == "cpu" {
			fmt.Printf("cpu=%d\n", CPUTime())
		}
	}
	r.Close()
	os.Exit(0)
}

// ReadBody takes a round trip's result, reads the body to its end into
// *buf (io.ReadAll would allocate a new buffer per call), closes it and
// checks for a 200 with a body of want bytes. It allocates only on
// errors.
func ReadBody(resp *http.Response, err error, buf *[]byte, want int) error {
	if err != nil {
		return err
	}
	p := (*buf)[:0]
	for {
		if len(p) == cap(p) {
			p = append(p, 0)[:len(p)]
		}
		n, rerr := resp.Body.Read(p[len(p):cap(p)])
		p = p[:len(p)+n]
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			resp.Body.Close()
			return rerr
		}
	}
	*buf = p
	if err := resp.Body.Close(); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || len(p) != want {
		return fmt.Errorf("%s with a body of %d bytes, want 200 with %d", resp.Status, len(p), want)
	}
	return nil
}
