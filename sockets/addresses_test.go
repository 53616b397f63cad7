package sockets_test

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
	"github.com/fusiongo/transport/sockets"
)

type staticResolver []netip.Addr

func (r staticResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return r, nil
}

type callKey struct{}

// TestAddressEjected: a host with two addresses, one of which answers 503:
// the pool ejects it after consecutive_failures, tells OnAddress with the
// context of the request that failed, reports it in Stats, and sends the
// next requests to the healthy address only.
func TestAddressEjected(t *testing.T) {
	ls, port := wiretest.ListenLoopbacks(t, 2)
	for i, l := range ls {
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if i == 0 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.Header().Set("X-Replica", "healthy")
		})}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
	}
	bad := netip.MustParseAddr(ls[0].Addr().(*net.TCPAddr).IP.String())
	events := make(chan any, 16)
	rt := newTransport(t, env.EngineH1, "http://replicas.test:"+port+"/graphql", func(c *sockets.Config) {
		c.Resolver = staticResolver{bad, netip.MustParseAddr(ls[1].Addr().(*net.TCPAddr).IP.String())}
		c.Settings.OutlierDetection = env.OutlierSettings{ConsecutiveFailures: 2, MaxEjectionPercent: 50, BaseEjection: time.Minute}
		c.OnAddress = func(ctx context.Context, e sockets.AddressEvent) {
			events <- ctx.Value(callKey{})
			events <- e
		}
	})
	call := func(i int) *http.Response {
		ctx := context.WithValue(context.Background(), callKey{}, i)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://replicas.test:"+port+"/graphql", strings.NewReader(`{}`))
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	var ejectedBy any
	var ev sockets.AddressEvent
	for i := 0; ejectedBy == nil; i++ {
		if i == 100 {
			t.Fatal("100 calls and the failing address was not ejected")
		}
		if resp := call(i); resp.StatusCode == http.StatusServiceUnavailable {
			select {
			case ejectedBy = <-events:
				ev = (<-events).(sockets.AddressEvent)
				if ejectedBy != i {
					t.Errorf("OnAddress had the context of call %v, want that of call %d, whose failure ejected it", ejectedBy, i)
				}
			default:
			}
		}
	}
	if ev.Address != bad || !ev.Ejected || ev.For != time.Minute || ev.Failures != 2 {
		t.Errorf("event %+v, want %v ejected for 1m after 2 failures", ev, bad)
	}
	st := rt.Stats()
	if len(st.Addresses) != 2 || st.Addresses[0].Address != bad || !st.Addresses[0].Ejected || st.Addresses[1].Ejected {
		t.Errorf("Stats().Addresses = %+v, want %v ejected and the other in service", st.Addresses, bad)
	}
	for i := range 20 {
		if resp := call(1000 + i); resp.Header.Get("X-Replica") != "healthy" {
			t.Fatalf("call %d after the ejection: status %d from the ejected address", i, resp.StatusCode)
		}
	}
}
