package transport_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// soakVar, set to 0, skips the long versions of the load tests (and the
// soak-only TestIdleTimeoutUnderLoad) without -short, for a quick local
// run. They run whenever -short is off, as in go test -race ./... and CI
// (about 100 s); -short runs the short versions only. docs/reliability.md
// has the figures of a run.
const soakVar = "FUSION_SOAK"

// soakEnabled reports whether the long versions run.
func soakEnabled() bool { return !testing.Short() && os.Getenv(soakVar) != "0" }

const (
	churnReloadEvery = 100 * time.Millisecond
	churnCallBudget  = 10 * time.Second // one call that hangs fails instead of hanging the test
	churnSettle      = 5 * time.Second  // connections that close asynchronously are waited for this long
	churnPoll        = 10 * time.Millisecond
)

// churnServer is a source schema that counts its connections as the server
// sees them (http.Server.ConnState): opened, closed, open now, and the
// most open at once.
type churnServer struct {
	*httptest.Server
	requests atomic.Int64

	mu                               sync.Mutex
	opened, closed, open             int
	maxOpen                          int
	openedSinceMark, closedSinceMark int
}

func newChurnServer(t *testing.T) *churnServer {
	t.Helper()
	s := &churnServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		s.requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"data":{"ok":true}}`)
	}))
	s.Config.ConnState = s.connState
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *churnServer) connState(_ net.Conn, st http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch st {
	case http.StateNew:
		s.opened++
		s.openedSinceMark++
		s.open++
		s.maxOpen = max(s.maxOpen, s.open)
	case http.StateClosed, http.StateHijacked:
		s.closed++
		s.closedSinceMark++
		s.open--
	}
}

// connCounts is a snapshot of a churnServer's connection counts.
type connCounts struct {
	opened, closed, open, maxOpen    int
	openedSinceMark, closedSinceMark int
}

func (s *churnServer) counts() connCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return connCounts{
		opened: s.opened, closed: s.closed, open: s.open, maxOpen: s.maxOpen,
		openedSinceMark: s.openedSinceMark, closedSinceMark: s.closedSinceMark,
	}
}

// mark starts counting opens and closes afresh, and resets the maximum of
// open connections to those open now.
func (s *churnServer) mark() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.openedSinceMark, s.closedSinceMark = 0, 0
	s.maxOpen = s.open
}

// waitOpen waits, polling, until at most want connections are open; it
// returns the last count.
func (s *churnServer) waitOpen(want int) int {
	deadline := time.Now().Add(churnSettle)
	for {
		n := s.counts().open
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(churnPoll)
	}
}

// netHTTPReuseSlack is how many of a kept schema's connections the churn
// lets net/http close on its own (see TestReloadChurn's check).
const netHTTPReuseSlack = 2

// churnCall sends one Post to schema, reads the answer, and records a
// failure; it reports whether the call succeeded.
func churnCall(inv transport.Invoker, schema string, fails *failures) bool {
	ctx, cancel := context.WithTimeout(context.Background(), churnCallBudget)
	defer cancel()
	resp, err := inv.Post(ctx, schema, []byte(`{"query":"{ ok }"}`))
	if err != nil {
		fails.add("%s: %v", schema, err)
		return false
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || string(body) != `{"data":{"ok":true}}` {
		fails.add("%s: %d %q, %v", schema, resp.StatusCode, body, err)
		return false
	}
	return true
}

// churnClosedLoop runs callers goroutines that each send to schemaOf(i), one
// request after the other, until stop; it returns the requests sent.
func churnClosedLoop(inv transport.Invoker, callers int, schemaOf func(int) string, stop <-chan struct{}, fails *failures) int64 {
	var sent atomic.Int64
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				sent.Add(1)
				churnCall(inv, schemaOf(i), fails)
			}
		})
	}
	wg.Wait()
	return sent.Load()
}

// churnSchema is one source schema of the churn and what its server saw.
type churnSchema struct {
	name, change        string
	srv                 *churnServer
	callers             int
	warm                int // connections open when the churn started
	openedDuring        int
	closedDuring        int
	openAfterLastReload int
	openedTotal         int
	closedTotal         int
}

// churnRow is what one run of TestReloadChurn saw, for the log and
// docs/reliability.md.
type churnRow struct {
	path              env.Path
	callers           int
	duration          time.Duration
	sent, failed      int64
	reloads           int
	schemas           []*churnSchema
	fdBefore, fdAfter int
	goBefore, goAfter int
}

// TestReloadChurn reloads the configuration every 100 ms while callers
// post in a closed loop to three source schemas: each reload changes
// products' conn_lifetime or reviews' idle_conn_timeout, in turn, and
// never accounts. No request may fail; every reload must say it kept
// accounts; accounts' warm connections are kept (its server sees none of
// them close during the churn, and on sockets no more connections than its
// callers); on sockets, products' and reviews' replaced pools close their
// connections once drained; after
// Close every connection is closed, and descriptors and goroutines return
// to where they were. The short version (8 callers, 2 s) always runs; the
// long one (50 callers, 30 s) without -short.
func TestReloadChurn(t *testing.T) {
	callers, duration := 8, 2*time.Second
	if soakEnabled() {
		callers, duration = 50, 30*time.Second
	}
	warmUp(t)
	var rows []churnRow
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			rows = append(rows, runReloadChurn(t, path, callers, duration))
		})
	}
	logChurnRows(t, rows)
}

func runReloadChurn(t *testing.T, path env.Path, callers int, duration time.Duration) churnRow {
	goleak.VerifyNone(t) // the previous test's goroutines may still be on their way out
	row := churnRow{path: path, callers: callers, duration: duration, fdBefore: wiretest.OpenFDs(), goBefore: runtime.NumGoroutine()}

	schemas := []*churnSchema{
		{name: "products", change: "conn_lifetime 1m <-> 2m", srv: newChurnServer(t)},
		{name: "reviews", change: "idle_conn_timeout 60s <-> 90s", srv: newChurnServer(t)},
		{name: "accounts", change: "never", srv: newChurnServer(t)},
	}
	products, reviews, accounts := schemas[0], schemas[1], schemas[2]
	for i := range callers {
		schemas[i%len(schemas)].callers++
	}
	schemaOf := func(i int) string { return schemas[i%len(schemas)].name }

	lifetimes := [2]time.Duration{time.Minute, 2 * time.Minute}
	idles := [2]time.Duration{60 * time.Second, 90 * time.Second}
	// configFor is the configuration of reload n (0: the initial one).
	// Odd reloads flip products' lifetime, even ones reviews' idle
	// timeout: each reload changes exactly one of them.
	configFor := func(n int) env.Config {
		cfg := config(path, products.name, products.srv.URL+"/graphql", reviews.name, reviews.srv.URL+"/graphql", accounts.name, accounts.srv.URL+"/graphql")
		// Legacy keeps Go's 2 idle connections per host unless told
		// otherwise, and would close the others whatever the reloads do.
		cfg.Defaults.MaxIdleConnsPerHost = callers
		p := cfg.SourceSchemas[products.name]
		p.ConnLifetime = lifetimes[((n+1)/2)%2]
		cfg.SourceSchemas[products.name] = p
		r := cfg.SourceSchemas[reviews.name]
		r.IdleConnTimeout = idles[(n/2)%2]
		cfg.SourceSchemas[reviews.name] = r
		return cfg
	}
	// Each reload logs what it did to the schemas; the log says whether
	// accounts was ever replaced.
	var reloadLog logBuffer
	inv := newInvoker(t, configFor(0), transport.WithLogger(slog.New(slog.NewTextHandler(&reloadLog, nil))))

	// Warm up: every caller sends once, all at the same time.
	var fails failures
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() { churnCall(inv, schemaOf(i), &fails) })
	}
	wg.Wait()
	row.sent += int64(callers)
	for _, s := range schemas {
		s.warm = s.srv.counts().open
		s.srv.mark()
	}

	// The churn: callers in a closed loop, a reload every 100 ms.
	stop := make(chan struct{})
	reloaderDone := make(chan struct{})
	var reloadErrs []error
	go func() {
		defer close(reloaderDone)
		tick := time.NewTicker(churnReloadEvery)
		defer tick.Stop()
		for n := 1; ; n++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if err := inv.Reload(configFor(n)); err != nil {
				reloadErrs = append(reloadErrs, err)
				continue
			}
			row.reloads++
		}
	}()
	timer := time.AfterFunc(duration, func() { close(stop) })
	defer timer.Stop()
	row.sent += churnClosedLoop(inv, callers, schemaOf, stop, &fails)
	<-reloaderDone
	failed, firstFails := fails.report()
	row.failed = failed
	for _, s := range schemas {
		c := s.srv.counts()
		s.openedDuring, s.closedDuring = c.openedSinceMark, c.closedSinceMark
	}

	for _, err := range reloadErrs {
		t.Errorf("reload rejected: %v", err)
	}
	if row.failed > 0 {
		t.Errorf("%d of %d requests failed during %d reloads; first errors:\n\t%s", row.failed, row.sent, row.reloads, firstFails)
	}
	if row.reloads < int(duration/churnReloadEvery)/2 {
		t.Errorf("only %d reloads in %v, want about %d", row.reloads, duration, duration/churnReloadEvery)
	}
	// What each reload did, as the path logs it: on sockets one pool
	// replaced (products' or reviews') and two kept; on legacy the shared
	// transport kept, as it reads only the defaults.
	wantPlan := map[env.Path]string{env.PathSockets: "kept=2 replaced=1 removed=0 added=0", pathH1: "kept=2 replaced=1 removed=0 added=0", env.PathLegacy: "kept=3 replaced=0 removed=0 added=0"}[path]
	if n, bad := reloadRecords(reloadLog.String(), wantPlan); n != row.reloads || bad != "" {
		t.Errorf("%d reloads logged for %d applied; want each to say %q, one said: %s", n, row.reloads, wantPlan, bad)
	}
	// accounts never changed: none of its connections may close, but for
	// net/http's own: before it reuses an HTTP/1 connection, net/http
	// waits at most 50 ms for its write goroutine to report the request
	// written (maxWriteWaitBeforeConnReuse, "set to a large value in
	// tests to avoid flakiness" in Go's own), and closes the connection
	// past that. On 2 cores under several suites at once the write
	// goroutine can be starved that long: with four copies of this test
	// at once, 2 of 8 runs of the nethttp engine saw one such close (and
	// its replacement), on this code and the code before addresses. A
	// reload that dropped accounts' pool would close all its connections;
	// the h1 engine has no write goroutine and gets no slack.
	slack := 0
	if path != pathH1 {
		slack = netHTTPReuseSlack
	}
	if accounts.closedDuring > slack {
		t.Errorf("accounts, never changed, saw %d of its connections close during the churn (net/http may close %d on its own): a reload dropped warm connections", accounts.closedDuring, slack)
	}
	switch path {
	case env.PathSockets, pathH1:
		// The pool dials only for a request that finds every connection
		// busy, so accounts cannot have more than its callers. (Legacy's
		// net/http starts a dial for such a request and gives it whichever
		// connection frees up first; the dialled one joins the pool, so
		// its count may pass the callers with no reload involved.)
		if accounts.warm+accounts.openedDuring > accounts.callers+slack {
			t.Errorf("accounts, never changed, had %d warm connections and opened %d more for %d callers: a reload replaced its pool", accounts.warm, accounts.openedDuring, accounts.callers)
		}
		// Each reload replaces products' or reviews' pool, which closes
		// its connections once their requests end.
		for _, s := range []*churnSchema{products, reviews} {
			if s.closedDuring == 0 || s.openedDuring == 0 {
				t.Errorf("%s (%s): %d connections opened and %d closed during %d reloads; want its replaced pools drained and closed", s.name, s.change, s.openedDuring, s.closedDuring, row.reloads)
			}
		}
		// One more reload that changes both: with no request running,
		// both replaced pools close every connection, and accounts keeps
		// its own.
		before := accounts.srv.counts()
		next := configFor(row.reloads + 1)
		p := next.SourceSchemas[products.name]
		p.ConnLifetime = 3 * time.Minute
		next.SourceSchemas[products.name] = p
		r := next.SourceSchemas[reviews.name]
		r.IdleConnTimeout = 3 * time.Minute
		next.SourceSchemas[reviews.name] = r
		if err := inv.Reload(next); err != nil {
			t.Fatal(err)
		}
		for _, s := range []*churnSchema{products, reviews} {
			if s.openAfterLastReload = s.srv.waitOpen(0); s.openAfterLastReload != 0 {
				t.Errorf("%s: %d connections still open %v after a reload replaced its idle pool", s.name, s.openAfterLastReload, churnSettle)
			}
		}
		after := accounts.srv.counts()
		accounts.openAfterLastReload = after.open
		if after.closed != before.closed || after.open != before.open {
			t.Errorf("accounts: the last reload changed its open connections from %d to %d (%d closed)", before.open, after.open, after.closed-before.closed)
		}
	}

	// Close: every connection closes, at once or when its request ends.
	inv.Close()
	for _, s := range schemas {
		if n := s.srv.waitOpen(0); n != 0 {
			t.Errorf("%s: %d connections still open %v after Close", s.name, n, churnSettle)
		}
		c := s.srv.counts()
		s.openedTotal, s.closedTotal = c.opened, c.closed
	}
	for _, s := range schemas {
		s.srv.Close()
	}
	goleak.VerifyNone(t)
	row.goAfter = runtime.NumGoroutine()
	row.fdAfter = wiretest.WaitFDs(row.fdBefore)
	if row.fdAfter != row.fdBefore {
		t.Errorf("%d descriptors open after the churn, %d before", row.fdAfter, row.fdBefore)
	}
	row.schemas = schemas
	return row
}

// logChurnRows logs rows as the tables of docs/reliability.md.
func logChurnRows(t *testing.T, rows []churnRow) {
	var b strings.Builder
	b.WriteString("\n| path | callers × time | sent | failed | reloads | fds before / after | goroutines before / after |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %d × %v | %d | %d | %d | %d / %d | %d / %d |\n", r.path, r.callers, r.duration, r.sent, r.failed, r.reloads, r.fdBefore, r.fdAfter, r.goBefore, r.goAfter)
	}
	b.WriteString("\n| path | source schema | reload changes | callers | warm conns | opened / closed during churn | open after a last reload | opened / closed in all |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		for _, s := range r.schemas {
			last := "-"
			if onSockets(r.path) {
				last = fmt.Sprint(s.openAfterLastReload)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %d / %d | %s | %d / %d |\n", r.path, s.name, s.change, s.callers, s.warm, s.openedDuring, s.closedDuring, last, s.openedTotal, s.closedTotal)
		}
	}
	t.Log(b.String())
}

// churnShutdown closes inv, waits until srv has seen every connection
// close, closes srv and fails the test if a goroutine is left behind; it
// returns the goroutines and descriptors open after, for the log.
func churnShutdown(t *testing.T, inv transport.Invoker, srv *churnServer, fdBefore int) (goAfter, fdAfter int) {
	t.Helper()
	inv.Close()
	if n := srv.waitOpen(0); n != 0 {
		t.Errorf("%d connections still open %v after Close", n, churnSettle)
	}
	srv.Close()
	goleak.VerifyNone(t)
	return runtime.NumGoroutine(), wiretest.WaitFDs(fdBefore)
}

// TestConnLifetimeUnderLoad: with a short conn_lifetime and callers in a
// closed loop on the sockets path, connections rotate (the server sees
// several open and close), no request fails, and no more connections are
// open at once than there are callers. Short version: lifetime 300 ms for
// 1.5 s; long (without -short): 1 s for 10 s.
func TestConnLifetimeUnderLoad(t *testing.T) {
	const callers = 8
	lifetime, duration := 300*time.Millisecond, 1500*time.Millisecond
	if soakEnabled() {
		lifetime, duration = time.Second, 10*time.Second
	}
	warmUp(t)
	goleak.VerifyNone(t)
	fdBefore, goBefore := wiretest.OpenFDs(), runtime.NumGoroutine()

	srv := newChurnServer(t)
	// The client side's own count of open connections, exact where the
	// server's lags: a connection counts from its dial until the pool
	// closes it.
	var clientOpen, clientMax atomic.Int64
	dialer := &net.Dialer{}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		n := clientOpen.Add(1)
		for m := clientMax.Load(); n > m && !clientMax.CompareAndSwap(m, n); m = clientMax.Load() {
		}
		return wiretest.OnClose(c, func() { clientOpen.Add(-1) }), nil
	}
	cfg := config(env.PathSockets, "products", srv.URL+"/graphql")
	s := cfg.SourceSchemas["products"]
	s.ConnLifetime = lifetime
	cfg.SourceSchemas["products"] = s
	inv := newInvoker(t, cfg, transport.WithSchemaOptions("products", transport.SchemaOptions{Dial: dial}))

	var fails failures
	stop := make(chan struct{})
	timer := time.AfterFunc(duration, func() { close(stop) })
	defer timer.Stop()
	sent := churnClosedLoop(inv, callers, func(int) string { return "products" }, stop, &fails)
	during := srv.counts()

	goAfter, fdAfter := churnShutdown(t, inv, srv, fdBefore)

	failed, firstFails := fails.report()
	t.Logf("\n| lifetime × time | callers | sent | failed | conns opened / closed during the run | most open at once (server / client) | fds before / after | goroutines before / after |\n|---|---|---|---|---|---|---|---|\n| %v × %v | %d | %d | %d | %d / %d | %d / %d | %d / %d | %d / %d |",
		lifetime, duration, callers, sent, failed, during.opened, during.closed, during.maxOpen, clientMax.Load(), fdBefore, fdAfter, goBefore, goAfter)

	if failed > 0 {
		t.Errorf("%d of %d requests failed while connections rotated; first errors:\n\t%s", failed, sent, firstFails)
	}
	// Every caller's connection must have been replaced at least once.
	if rotations := int(duration / lifetime); during.opened < 2*callers || during.closed < callers {
		t.Errorf("the server saw %d connections open and %d close in %v with a %v lifetime; want them to rotate (about %d generations of %d)", during.opened, during.closed, duration, lifetime, rotations, callers)
	}
	if m := clientMax.Load(); m > callers {
		t.Errorf("the pool had %d connections open at once for %d callers", m, callers)
	}
	// The server's count lags: it sees a connection close a moment after
	// the pool closed it and may already have dialled the next, so it is
	// held to a looser bound, which still catches connections that are
	// never closed.
	if during.maxOpen > 2*callers {
		t.Errorf("the server saw %d connections open at once for %d callers", during.maxOpen, callers)
	}
	if fdAfter != fdBefore {
		t.Errorf("%d descriptors open after the run, %d before", fdAfter, fdBefore)
	}
}

// reloadRecords counts the "transport reloaded" records of log and
// returns the first that does not hold want.
func reloadRecords(log, want string) (n int, bad string) {
	for line := range strings.Lines(log) {
		if !strings.Contains(line, `msg="transport reloaded"`) {
			continue
		}
		n++
		if bad == "" && !strings.Contains(line, want) {
			bad = strings.TrimSpace(line)
		}
	}
	return n, bad
}

// TestIdleTimeoutUnderLoad (soak only: without -short): on
// the sockets path with idle_conn_timeout 1 ms, 16 callers that pause
// 0.5 to 1.5 ms between requests keep picking connections just as their
// idle timers close them. No request may fail: a connection that the
// pool closes must never be one a request has just taken. It reproduces
// a race in internal/sockets/pool.go (docs/reliability.md, "Bugs found by the
// load tests"); it hits one request in 4,000 to 23,000 under -race, too
// rarely for the short run to fail reliably, so it only runs in the soak.
func TestIdleTimeoutUnderLoad(t *testing.T) {
	if !soakEnabled() {
		t.Skipf("soak only: runs without -short (and without %s=0)", soakVar)
	}
	const callers, duration = 16, 30 * time.Second
	warmUp(t)
	goleak.VerifyNone(t)
	fdBefore, goBefore := wiretest.OpenFDs(), runtime.NumGoroutine()
	srv := newChurnServer(t)
	cfg := config(env.PathSockets, "products", srv.URL+"/graphql")
	s := cfg.SourceSchemas["products"]
	s.IdleConnTimeout = time.Millisecond
	cfg.SourceSchemas["products"] = s
	inv := newInvoker(t, cfg)

	var fails failures
	var sent atomic.Int64
	deadline := time.Now().Add(duration)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			pause := time.Duration(500+(i*997)%1000) * time.Microsecond
			for time.Now().Before(deadline) {
				sent.Add(1)
				churnCall(inv, "products", &fails)
				time.Sleep(pause)
				pause = 500*time.Microsecond + (pause+137*time.Microsecond)%time.Millisecond
			}
		})
	}
	wg.Wait()
	during := srv.counts()
	goAfter, fdAfter := churnShutdown(t, inv, srv, fdBefore)

	failed, firstFails := fails.report()
	t.Logf("\n| idle timeout × time | callers | sent | failed | schema saw | conns opened / closed | fds before / after | goroutines before / after |\n|---|---|---|---|---|---|---|---|\n| 1ms × %v | %d | %d | %d | %d | %d / %d | %d / %d | %d / %d |",
		duration, callers, sent.Load(), failed, srv.requests.Load(), during.opened, during.closed, fdBefore, fdAfter, goBefore, goAfter)
	if failed > 0 {
		t.Errorf("BUG: %d of %d requests failed because the pool closed the connection they had just taken "+
			"(internal/sockets/pool.go: get reserves a picked HTTP/1 connection after releasing p.mu, so idleExpired, drain or an expiry can close it in between); first errors:\n\t%s",
			failed, sent.Load(), firstFails)
	}
	if fdAfter != fdBefore {
		t.Errorf("%d descriptors open after the run, %d before", fdAfter, fdBefore)
	}
}
