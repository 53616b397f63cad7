package benchrun

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fusiongo/transport/cmd/fusion-transport/internal/benchgw"
	"github.com/fusiongo/transport/cmd/fusion-transport/internal/load"
	"github.com/fusiongo/transport/cmd/fusion-transport/internal/schemas"
)

// probe reads a running gateway: its /debug endpoints and its /proc files;
// and the source schemas' counts of the calls that reached them.
type probe struct {
	base    string // http://127.0.0.1:PORT
	pid     int
	schemas []string // the source schemas' endpoints
	client  *http.Client
}

func newProbe(base string, pid int, schemaURLs []string) *probe {
	return &probe{base: base, pid: pid, schemas: schemaURLs, client: &http.Client{Transport: &http.Transport{DisableCompression: true}}}
}

// snapshot is the gateway's state at one moment.
type snapshot struct {
	cpu         time.Duration
	stats       benchgw.DebugStats
	schemaCalls int64 // the requests the source schemas received, summed
}

func (s snapshot) allocBytes() uint64   { return s.stats.Metrics[benchgw.AllocBytesMetric] }
func (s snapshot) allocObjects() uint64 { return s.stats.Metrics[benchgw.AllocObjectsMetric] }

// snapshot reads the CPU time, /debug/stats and the source schemas'
// counts, back to back.
func (p *probe) snapshot(ctx context.Context) (snapshot, error) {
	var s snapshot
	var err error
	if s.cpu, err = cpuTime(p.pid); err != nil {
		return s, err
	}
	body, err := p.get(ctx, "/debug/stats")
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(body, &s.stats); err != nil {
		return s, fmt.Errorf("gateway /debug/stats: %w", err)
	}
	s.schemaCalls, err = schemas.Calls(ctx, p.client, p.schemas)
	return s, err
}

// warm sends one gateway request and checks the answer.
func (p *probe) warm(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+"/graphql", bytes.NewReader(load.DefaultBody))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		return fmt.Errorf("gateway warm-up request: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("gateway warm-up request: %w", err)
	}
	if resp.StatusCode != http.StatusOK || !bytes.HasPrefix(body, []byte(`{"data":{"users":[`)) {
		return fmt.Errorf("gateway warm-up request: status %d: %.300s", resp.StatusCode, body)
	}
	return nil
}

func (p *probe) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("gateway %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("gateway %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("gateway %s: status %d: %.300s", path, resp.StatusCode, body)
	}
	return body, nil
}

// profiler fetches the gateway's profiles during a measured window.
type profiler struct {
	p      *probe
	prefix string // DIR/MODE-PATH
	cpu    chan error
	err    error
}

// startProfile starts a CPU profile of the window's length (whole seconds,
// at least one).
func startProfile(ctx context.Context, p *probe, dir, name string, window time.Duration) *profiler {
	pr := &profiler{p: p, prefix: filepath.Join(dir, name), cpu: make(chan error, 1)}
	seconds := max(1, int(window/time.Second))
	go func() {
		pr.cpu <- pr.save(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", seconds), ".cpu.pprof")
	}()
	return pr
}

// allocs saves the allocation profile (all allocations since the gateway
// started: alloc_space and alloc_objects).
func (pr *profiler) allocs(ctx context.Context) {
	pr.err = pr.save(ctx, "/debug/pprof/allocs", ".allocs.pprof")
}

// wait waits for the CPU profile and returns the errors of both.
func (pr *profiler) wait() error {
	return errors.Join(pr.err, <-pr.cpu)
}

func (pr *profiler) save(ctx context.Context, path, suffix string) error {
	body, err := pr.p.get(ctx, path)
	if err != nil {
		return err
	}
	return os.WriteFile(pr.prefix+suffix, body, 0o644)
}

// loadResult is the JSON line of "fusion-transport load".
type loadResult = load.Result

// runLoad runs "fusion-transport load" against url and calls onMeasure and
// onWindowEnd when the load process says that the measured window starts and
// ends.
func runLoad(ctx context.Context, o Options, url string, onMeasure, onWindowEnd func()) (loadResult, error) {
	var res loadResult
	args := []string{"load", "-url", url, "-vus", fmt.Sprint(o.vus()), "-duration", o.duration().String(), "-warmup", o.warmup().String()}
	if o.Distinct {
		args = append(args, "-distinct")
	}
	if o.Cache {
		args = append(args, "-users")
	}
	cmd := exec.CommandContext(ctx, o.Binary, args...)
	cmd.Env = o.Environ
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return res, err
	}
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("load: %w", err)
	}
	var other strings.Builder // stderr lines that are not window marks
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		switch line := sc.Text(); {
		case strings.HasPrefix(line, load.MeasureLine):
			onMeasure()
		case line == load.WindowEndLine:
			onWindowEnd()
		default:
			if other.Len() < 4<<10 {
				other.WriteString(line + "\n")
			}
		}
	}
	waitErr := cmd.Wait()
	// Exit status 1 means the run had errors; its result line tells them.
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &res); err != nil {
		return res, fmt.Errorf("load: %v; no result line (%v): %s", waitErr, err, strings.TrimSpace(other.String()))
	}
	return res, nil
}
