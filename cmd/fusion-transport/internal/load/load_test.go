package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// server counts requests and connections; every fifth request fails with
// 500.
type server struct {
	requests atomic.Int64
	conns    atomic.Int64
	mu       sync.Mutex
	bodies   map[string]int
	headers  http.Header
}

func (s *server) start(t *testing.T) *httptest.Server {
	t.Helper()
	s.bodies = map[string]int{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies[r.Method+" "+r.URL.Path+" "+string(b)]++
		s.headers = r.Header.Clone()
		s.mu.Unlock()
		if s.requests.Add(1)%5 == 0 {
			http.Error(w, "no", http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, `{"data":{}}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func TestRun(t *testing.T) {
	var s server
	srv := s.start(t)
	var events []string
	var mu sync.Mutex
	event := func(e string) func() {
		return func() { mu.Lock(); events = append(events, e); mu.Unlock() }
	}
	res, err := Run(context.Background(), Config{
		URL:         srv.URL + "/graphql?x=1",
		VUs:         4,
		Duration:    200 * time.Millisecond,
		Warmup:      50 * time.Millisecond,
		OnMeasure:   event("measure"),
		OnWindowEnd: event("end"),
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Requests == 0 || res.Errors == 0 {
		t.Errorf("Result %+v: want both answers and errors (every fifth answer is a 500)", res)
	}
	// Answers outside the window do not count.
	if total := res.Requests + res.Errors; total > s.requests.Load() {
		t.Errorf("counted %d answers, the server gave %d", total, s.requests.Load())
	}
	if res.Errors > res.Requests {
		t.Errorf("%d errors for %d answers, want about one in five", res.Errors, res.Requests)
	}
	if !strings.Contains(res.FirstError, "500") {
		t.Errorf("FirstError %q, want the 500 status", res.FirstError)
	}
	if res.VUs != 4 || res.Seconds != 0.2 || res.RequestsPerSecond != float64(res.Requests)/0.2 {
		t.Errorf("Result %+v: want 4 VUs, 0.2 s and req/s = requests / 0.2", res)
	}
	if !(res.P50 > 0 && res.P50 <= res.P95 && res.P95 <= res.P99 && res.P99 <= res.Max) {
		t.Errorf("percentiles out of order: %+v", res)
	}
	// The distribution for the pictures: every quantile of Quantiles, in
	// order, from the same histogram as P50, P95 and P99.
	if len(res.Percentiles) != len(Quantiles) {
		t.Fatalf("%d percentiles, want %d", len(res.Percentiles), len(Quantiles))
	}
	for i, p := range res.Percentiles {
		if p.Quantile != Quantiles[i] || p.MS <= 0 || p.MS > res.Max || (i > 0 && p.MS < res.Percentiles[i-1].MS) {
			t.Errorf("percentile %d %+v out of order or range (max %v): %+v", i, p, res.Max, res.Percentiles)
		}
		switch p.Quantile {
		case 50, 95, 99:
			if want := map[float64]float64{50: res.P50, 95: res.P95, 99: res.P99}[p.Quantile]; p.MS != want {
				t.Errorf("p%v %v, want P%v's %v", p.Quantile, p.MS, p.Quantile, want)
			}
		}
	}
	// A failed answer keeps the connection: one per user.
	if c := s.conns.Load(); c != 4 {
		t.Errorf("%d connections, want one per user (4)", c)
	}
	if diff := cmp.Diff([]string{"measure", "end"}, events); diff != "" {
		t.Errorf("callbacks mismatch (-want +got):\n%s", diff)
	}
	// Every request was the deep-recursion query, as JSON.
	want := "POST /graphql " + string(DefaultBody)
	for body := range s.bodies {
		if body != want {
			t.Errorf("request %q, want %q", body, want)
		}
	}
	if got := s.headers.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type %q, want application/json", got)
	}
}

// TestRunDistinct: with Distinct every request the server saw carried its
// own X-Request-Id (none repeated, across users and over time), each
// user's in sequence; without it, none.
func TestRunDistinct(t *testing.T) {
	for _, distinct := range []bool{false, true} {
		t.Run(fmt.Sprint("distinct=", distinct), func(t *testing.T) {
			var mu sync.Mutex
			ids := map[string]int{}
			var missing, n atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				n.Add(1)
				if id := r.Header.Get(RequestIDHeader); id != "" {
					mu.Lock()
					ids[id]++
					mu.Unlock()
				} else {
					missing.Add(1)
				}
				_, _ = io.WriteString(w, `{"data":{}}`)
			}))
			t.Cleanup(srv.Close)
			res, err := Run(context.Background(), Config{URL: srv.URL, VUs: 3, Duration: 100 * time.Millisecond, Distinct: distinct})
			if err != nil || res.Requests == 0 {
				t.Fatalf("Run: %+v, %v", res, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if !distinct {
				if len(ids) != 0 {
					t.Errorf("without Distinct %d requests carried %s", len(ids), RequestIDHeader)
				}
				return
			}
			if missing.Load() != 0 || int64(len(ids)) != n.Load() {
				t.Fatalf("%d requests, %d distinct ids, %d without one; want every request its own", n.Load(), len(ids), missing.Load())
			}
			perUser := map[string]int{}
			for id, count := range ids {
				user, seq, ok := strings.Cut(id, "-")
				if count != 1 || !ok || len(seq) != seqDigits {
					t.Fatalf("id %q seen %d times, want once, as vuNNN-%d digits", id, count, seqDigits)
				}
				perUser[user]++
			}
			if len(perUser) != 3 {
				t.Errorf("ids from %d users, want 3: %v", len(perUser), perUser)
			}
			for user, count := range perUser {
				for i := 1; i <= count; i++ {
					if ids[fmt.Sprintf("%s-%0*d", user, seqDigits, i)] != 1 {
						t.Errorf("%s: request %d of %d missing; its ids are not its count in sequence", user, i, count)
						break
					}
				}
			}
		})
	}
}

// TestRunUsers: with Users every request carries its virtual user's own
// Authorization, the same on each of the user's requests (with Distinct,
// the user its X-Request-Id names); without it, none.
func TestRunUsers(t *testing.T) {
	for _, tc := range []struct{ users, distinct bool }{{false, false}, {true, false}, {true, true}} {
		t.Run(fmt.Sprintf("users=%v,distinct=%v", tc.users, tc.distinct), func(t *testing.T) {
			var mu sync.Mutex
			auths := map[string]int{}
			var mismatched []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				auth := r.Header.Get(UserHeader)
				mu.Lock()
				auths[auth]++
				if id := r.Header.Get(RequestIDHeader); tc.distinct && !strings.HasPrefix(id, strings.TrimPrefix(auth, UserPrefix)+"-") {
					mismatched = append(mismatched, auth+" "+id)
				}
				mu.Unlock()
				_, _ = io.WriteString(w, `{"data":{}}`)
			}))
			t.Cleanup(srv.Close)
			res, err := Run(context.Background(), Config{URL: srv.URL, VUs: 3, Duration: 100 * time.Millisecond, Users: tc.users, Distinct: tc.distinct})
			if err != nil || res.Requests == 0 {
				t.Fatalf("Run: %+v, %v", res, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if !tc.users {
				if len(auths) != 1 || auths[""] == 0 {
					t.Errorf("without Users the requests carried %s: %v", UserHeader, auths)
				}
				return
			}
			want := map[string]bool{"Bearer vu000": true, "Bearer vu001": true, "Bearer vu002": true}
			if len(auths) != len(want) {
				t.Errorf("%s values %v, want one per user: %v", UserHeader, auths, want)
			}
			for a := range auths {
				if !want[a] {
					t.Errorf("%s %q, want one of %v", UserHeader, a, want)
				}
			}
			if len(mismatched) > 0 {
				t.Errorf("requests whose %s names another user than their %s: %v", UserHeader, RequestIDHeader, mismatched)
			}
		})
	}
}

func TestDefaultBody(t *testing.T) {
	var b struct {
		Query         string `json:"query"`
		OperationName string `json:"operationName"`
	}
	if err := json.Unmarshal(DefaultBody, &b); err != nil {
		t.Fatal(err)
	}
	if b.OperationName != "TestQuery" || !strings.Contains(b.Query, "query TestQuery {") || !strings.Contains(b.Query, "topProducts {") {
		t.Errorf("DefaultBody = %s, want the deep-recursion query", DefaultBody)
	}
}

func TestRunErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"https", Config{URL: "https://127.0.0.1:1/graphql"}, "want an http URL"},
		{"no host", Config{URL: "http:///graphql"}, "no host"},
		{"bad url", Config{URL: "http://[::1"}, "invalid url"},
		{"negative", Config{URL: "http://127.0.0.1:1/", VUs: -1}, "must not be negative"},
		// A password in -url is not printed.
		{"https with a password", Config{URL: "https://u:s3cr3t-pw@127.0.0.1:1/graphql"}, `invalid url "https://u:xxxxx@127.0.0.1:1/graphql": want an http URL`},
		{"bad url with a password", Config{URL: "http://u:s3cr3t-pw@[::1"}, `invalid url "http://xxxxx@[::1": parse "http://xxxxx@[::1": missing ']' in host`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run: %v, want an error containing %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "s3cr3t-pw") {
				t.Errorf("Run: %v holds the password", err)
			}
		})
	}
}

// TestRunRefused counts requests to a closed port as errors without
// failing the run.
func TestRunRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	res, err := Run(context.Background(), Config{URL: "http://" + addr + "/", VUs: 2, Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Requests != 0 || res.Errors == 0 || res.FirstError == "" {
		t.Errorf("Result %+v: want only errors", res)
	}
}

// TestRunCanceled ends a run early, with a request stuck in flight.
func TestRunCanceled(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := Run(ctx, Config{URL: srv.URL, VUs: 2, Duration: time.Minute})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v, want context.Canceled", err)
	}
}
