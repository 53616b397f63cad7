package benchrun

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// readyTimeout bounds the wait for a child's first lines (the schemas'
// URLs, the gateway's ready line).
const readyTimeout = 30 * time.Second

// stopTimeout is how long a child gets to exit after SIGTERM before it is
// killed.
const stopTimeout = 5 * time.Second

// child is a running fusion-transport process.
type child struct {
	name   string
	cmd    *exec.Cmd
	stderr *tail
	lines  chan string // stdout lines, until the first read error
	exited chan struct{}
	err    error // of Wait, once exited is closed

	stopOnce sync.Once
}

// startChild starts bin with args and environ. Its stdout is read line by
// line into lines; its stderr is kept (the last part) for error messages.
func startChild(name, bin string, args, environ []string) (*child, error) {
	c := &child{name: name, stderr: &tail{max: 8 << 10}, lines: make(chan string, 16), exited: make(chan struct{})}
	c.cmd = exec.Command(bin, args...)
	c.cmd.Env = environ
	c.cmd.Stderr = c.stderr
	// The child dies with the benchmark, even if the benchmark is killed.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var reading sync.WaitGroup
	reading.Go(func() {
		defer close(c.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case c.lines <- sc.Text():
			default: // nobody reads any more: drop, so the child never blocks
			}
		}
		_, _ = io.Copy(io.Discard, out)
	})
	go func() {
		reading.Wait() // Wait closes the pipe: read it to the end first
		c.err = c.cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// pid is the child's process id.
func (c *child) pid() int { return c.cmd.Process.Pid }

// readLine returns the next stdout line, waiting at most readyTimeout.
func (c *child) readLine(ctx context.Context) (string, error) {
	timer := time.NewTimer(readyTimeout)
	defer timer.Stop()
	select {
	case line, ok := <-c.lines:
		if !ok {
			<-c.exited
			return "", c.failure("exited before it was ready")
		}
		return line, nil
	case <-timer.C:
		return "", c.failure(fmt.Sprintf("not ready after %s", readyTimeout))
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
}

// failure describes the child's failure with the end of its stderr.
func (c *child) failure(what string) error {
	msg := fmt.Sprintf("%s %s", c.name, what)
	select {
	case <-c.exited:
		if c.err != nil {
			msg += " (" + c.err.Error() + ")"
		}
	default:
	}
	if s := strings.TrimSpace(c.stderr.String()); s != "" {
		msg += ": " + s
	}
	return errors.New(msg)
}

// stop sends SIGTERM, waits for the exit and kills the child if it takes
// longer than stopTimeout.
func (c *child) stop() {
	c.stopOnce.Do(func() {
		select {
		case <-c.exited:
			return
		default:
		}
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		timer := time.NewTimer(stopTimeout)
		defer timer.Stop()
		select {
		case <-c.exited:
		case <-timer.C:
			_ = c.cmd.Process.Kill()
			<-c.exited
		}
	})
}

// tail keeps the last max bytes written to it; safe for concurrent use.
type tail struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
