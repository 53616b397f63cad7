package load

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// The histogram records microseconds from 1 µs to a minute with three
// significant digits; longer latencies are recorded as a minute.
const (
	histMin     = 1
	histMax     = int64(time.Minute / time.Microsecond)
	histDigits  = 3
	dialBackoff = 10 * time.Millisecond // after a failed dial, so that a closed port does not spin
)

// Run runs the load described by cfg and returns what the measured window
// saw. It returns early, with an error, when ctx ends. Only an invalid
// Config or ctx make it fail: request errors are counted in the Result.
func Run(ctx context.Context, cfg Config) (Result, error) {
	t, err := parseTarget(cfg.URL)
	if err != nil {
		return Result{}, err
	}
	if cfg.VUs < 0 || cfg.Duration < 0 || cfg.Warmup < 0 {
		return Result{}, fmt.Errorf("invalid load: vus %d, duration %s, warm-up %s must not be negative", cfg.VUs, cfg.Duration, cfg.Warmup)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	users := make([]*vu, cfg.vus())
	shared := requestBytes(t, cfg.body(), cfg.contentType(), "", "")
	for i := range users {
		u := &vu{addr: t.addr, req: shared, timeout: cfg.timeout(), hist: hdrhistogram.New(histMin, histMax, histDigits)}
		var id, user string
		if cfg.Distinct {
			id = fmt.Sprintf("vu%03d-%0*d", i, seqDigits, 0)
		}
		if cfg.Users {
			user = fmt.Sprintf("%svu%03d", UserPrefix, i)
		}
		if id != "" || user != "" {
			u.req = requestBytes(t, cfg.body(), cfg.contentType(), id, user)
		}
		if cfg.Distinct {
			u.seq = u.req[bytes.Index(u.req, []byte(RequestIDHeader+": "))+len(RequestIDHeader)+2+len("vu000-"):][:seqDigits]
		}
		users[i] = u
	}

	start := time.Now()
	measureAt := start.Add(cfg.Warmup)
	end := measureAt.Add(cfg.duration())
	var wg sync.WaitGroup
	for _, u := range users {
		wg.Go(func() { u.loop(ctx, measureAt, end) })
	}

	// The callbacks run here, on time, while the users work.
	if sleepUntil(ctx, measureAt) && cfg.OnMeasure != nil {
		cfg.OnMeasure()
	}
	if sleepUntil(ctx, end) && cfg.OnWindowEnd != nil {
		cfg.OnWindowEnd()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("load run stopped: %w", context.Cause(ctx))
	}
	return summarize(users, cfg.duration()), nil
}

// sleepUntil waits until t; false if ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// summarize merges the users' counts and histograms.
func summarize(users []*vu, window time.Duration) Result {
	all := hdrhistogram.New(histMin, histMax, histDigits)
	res := Result{Seconds: window.Seconds(), VUs: len(users)}
	for _, u := range users {
		all.Merge(u.hist)
		res.Requests += u.ok
		res.Errors += u.errors
		if res.FirstError == "" && u.firstErr != nil {
			res.FirstError = u.firstErr.Error()
		}
	}
	res.RequestsPerSecond = float64(res.Requests) / res.Seconds
	ms := func(us int64) float64 { return float64(us) / 1000 }
	if all.TotalCount() > 0 {
		res.P50 = ms(all.ValueAtQuantile(50))
		res.P95 = ms(all.ValueAtQuantile(95))
		res.P99 = ms(all.ValueAtQuantile(99))
		res.Percentiles = make([]Percentile, len(Quantiles))
		for i, q := range Quantiles {
			res.Percentiles[i] = Percentile{Quantile: q, MS: ms(all.ValueAtQuantile(q))}
		}
		res.Max = ms(all.Max())
		res.Mean = all.Mean() / 1000
	}
	return res
}

// requestBytes is the whole HTTP/1.1 request a user writes; with an id,
// it carries RequestIDHeader with that value; with a user, UserHeader.
func requestBytes(t target, body []byte, contentType, id, user string) []byte {
	head := "POST " + t.path + " HTTP/1.1\r\n" +
		"Host: " + t.host + "\r\n" +
		"User-Agent: fusion-transport-load\r\n" +
		"Content-Type: " + contentType + "\r\n" +
		"Accept: application/graphql-response+json, application/json\r\n"
	if id != "" {
		head += RequestIDHeader + ": " + id + "\r\n"
	}
	if user != "" {
		head += UserHeader + ": " + user + "\r\n"
	}
	head += "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
	return append([]byte(head), body...)
}

// seqDigits is the width of a distinct request's count: it wraps after
// 10^12 requests of one user, far beyond any run.
const seqDigits = 12

// next writes the user's next count into its request's RequestIDHeader
// value, in place.
func (u *vu) next() {
	u.n++
	v := u.n
	for i := len(u.seq) - 1; i >= 0; i-- {
		u.seq[i] = byte('0' + v%10)
		v /= 10
	}
}

// vu is one virtual user: one connection at a time, one request at a time.
// Only its own goroutine touches it until Run's wg.Wait.
type vu struct {
	addr    string
	req     []byte // shared by every user, read-only, unless Distinct
	seq     []byte // with Distinct: the digits of the count inside req; nil otherwise
	n       int64  // with Distinct: requests sent
	timeout time.Duration

	conn     net.Conn
	br       *bufio.Reader
	stopConn func() bool // unregisters the context watch of conn

	hist     *hdrhistogram.Histogram
	ok       int64
	errors   int64
	firstErr error
}

func (u *vu) loop(ctx context.Context, measureAt, end time.Time) {
	defer u.drop()
	for ctx.Err() == nil {
		begin := time.Now()
		if !begin.Before(end) {
			return
		}
		err := u.do(ctx)
		done := time.Now()
		if err != nil && u.firstErr == nil {
			u.firstErr = err
		}
		if done.Before(measureAt) || done.After(end) {
			continue
		}
		if err != nil {
			u.errors++
			continue
		}
		u.ok++
		us := done.Sub(begin).Microseconds()
		_ = u.hist.RecordValue(min(max(us, histMin), histMax))
	}
}

// do sends one request and reads its answer to the end.
func (u *vu) do(ctx context.Context) error {
	if u.conn == nil {
		if err := u.dial(ctx); err != nil {
			sleepUntil(ctx, time.Now().Add(dialBackoff))
			return err
		}
	}
	if err := u.conn.SetDeadline(time.Now().Add(u.timeout)); err != nil {
		u.drop()
		return err
	}
	if u.seq != nil {
		u.next()
	}
	if _, err := u.conn.Write(u.req); err != nil {
		u.drop()
		return fmt.Errorf("writing the request: %w", err)
	}
	resp, err := http.ReadResponse(u.br, nil)
	if err != nil {
		u.drop()
		return fmt.Errorf("reading the answer: %w", err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.Close {
		u.drop()
	}
	if err != nil {
		return fmt.Errorf("reading the answer's body: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: %s", errStatus, resp.Status)
	}
	return nil
}

func (u *vu) dial(ctx context.Context) error {
	d := net.Dialer{Timeout: u.timeout}
	c, err := d.DialContext(ctx, "tcp", u.addr)
	if err != nil {
		return err
	}
	u.conn = c
	// Ending ctx cuts a request in flight.
	u.stopConn = context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	if u.br == nil {
		u.br = bufio.NewReaderSize(c, 32<<10)
	} else {
		u.br.Reset(c)
	}
	return nil
}

func (u *vu) drop() {
	if u.conn == nil {
		return
	}
	u.stopConn()
	_ = u.conn.Close()
	u.conn = nil
}
