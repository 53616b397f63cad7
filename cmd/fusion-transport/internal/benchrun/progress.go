package benchrun

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// runOverhead is the first guess of what a run costs beyond its warm-up and
// window (starting and stopping the gateway and the load); finished runs
// replace it with what they took.
const runOverhead = 500 * time.Millisecond

// progress shows the round, mode, path and time left: one line per run, or
// with live one line rewritten every second. A progress on a nil writer
// shows nothing.
type progress struct {
	w    io.Writer
	live bool

	mu       sync.Mutex
	total    int           // runs
	finished int           // runs done
	spent    time.Duration // wall time of the finished runs
	perRun   time.Duration // estimate of one run
	label    string
	runStart time.Time
	stop     chan struct{} // ends the live ticker
	ticking  sync.WaitGroup
}

func newProgress(w io.Writer, live bool, total int, window time.Duration) *progress {
	return &progress{w: w, live: live, total: total, perRun: window + runOverhead}
}

// start marks the start of a run.
func (p *progress) start(round, rounds int, mode, path string) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	p.label = fmt.Sprintf("round %d/%d %s %s", round, rounds, mode, path)
	p.runStart = time.Now()
	line := p.lineLocked()
	p.mu.Unlock()
	if !p.live {
		fmt.Fprintln(p.w, line)
		return
	}
	p.show(line)
	if p.stop == nil {
		p.stop = make(chan struct{})
		p.ticking.Go(p.tick)
	}
}

// done marks the end of the current run.
func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finished++
	p.spent += time.Since(p.runStart)
	p.perRun = p.spent / time.Duration(p.finished)
}

func (p *progress) tick() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			p.mu.Lock()
			line := p.lineLocked()
			p.mu.Unlock()
			p.show(line)
		case <-p.stop:
			return
		}
	}
}

// show rewrites the live line.
func (p *progress) show(line string) {
	fmt.Fprintf(p.w, "\r\033[K%s", line)
}

func (p *progress) lineLocked() string {
	left := time.Duration(p.total-p.finished)*p.perRun - time.Since(p.runStart)
	return fmt.Sprintf("%s … %s left", p.label, formatLeft(left))
}

// formatLeft writes a time left in whole seconds, such as 1m20s.
func formatLeft(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return d.Round(time.Second).String()
}

// close stops the live line.
func (p *progress) close() {
	if p.stop != nil {
		close(p.stop)
		p.ticking.Wait()
		p.stop = nil
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// finish reports the end of the whole run.
func (p *progress) finish(elapsed time.Duration) {
	if p.w == nil {
		return
	}
	p.close()
	fmt.Fprintf(p.w, "bench: %d runs in %s\n", p.finished, elapsed.Round(100*time.Millisecond))
}
