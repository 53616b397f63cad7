package transport_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// TestErrorsPromised: the errors that the root package's and package
// fault's documentation promise, on every path and every way to call
// (Post, PostFunc, Do, Client), match package fault's sentinel or type
// with errors.Is or errors.As, and name the source schema (a request
// routed by URL that no schema serves, as it matches none or the invoker
// is closed, names its method and URL). A request refused
// before sending leaves the source schema without a request; one cut by a
// bound reached it once.
func TestErrorsPromised(t *testing.T) {
	const bound = 50 * time.Millisecond
	cases := []struct {
		name string
		// edit sets the schema's settings; nil: none.
		edit func(*env.SourceSchema)
		// hold: the source schema sends nothing until the test ends.
		hold bool
		// closed: the invoker is closed before the call.
		closed bool
		// schema, path: the name the call gives and the path of its URL
		// under the server ("": the schema's own).
		schema, path string
		match        func(error) bool
		want         string // what the error must name
		// byURL: a request through Client names its URL instead, as no
		// schema serves it (it matches none, or the invoker is closed).
		byURL bool
		seen  int // requests the source schema receives
	}{
		{name: "closed", closed: true, schema: "products", byURL: true,
			match: func(err error) bool { return errors.Is(err, fault.ErrClosed) },
			want:  `source schema "products"`},
		{name: "unknown schema", schema: "nope", path: "/nope", byURL: true,
			match: func(err error) bool { return errors.Is(err, fault.ErrUnknownSchema) },
			want:  `source schema "nope"`},
		{name: "header_timeout", hold: true, schema: "products", seen: 1,
			edit: func(s *env.SourceSchema) { s.HeaderTimeout = bound },
			match: func(err error) bool {
				hte, ok := errors.AsType[*fault.HeaderTimeoutError](err)
				return ok && hte.Bound == bound && errors.Is(err, context.DeadlineExceeded)
			},
			want: `source schema "products"`},
		{name: "request_timeout", hold: true, schema: "products", seen: 1,
			edit: func(s *env.SourceSchema) { s.RequestTimeout = bound },
			match: func(err error) bool {
				rte, ok := errors.AsType[*fault.RequestTimeoutError](err)
				return ok && rte.Bound == bound && errors.Is(err, context.DeadlineExceeded)
			},
			want: `source schema "products"`},
	}
	for _, path := range paths {
		for _, tc := range cases {
			for _, call := range errCalls {
				t.Run(fmt.Sprintf("%s/%s/%s", path, tc.name, call.name), func(t *testing.T) {
					var srv *schemaServer
					if tc.hold {
						release := make(chan struct{})
						srv = newWireServer(t, wiretest.Options{Handler: wiretest.HoldHandler(release)})
						t.Cleanup(func() { close(release) }) // before the server closes
					} else {
						srv = newSchemaServer(t, nil)
					}
					inv := newInvoker(t, withSchema(path, srv.URL(), tc.edit))
					if tc.closed {
						inv.Close()
					}
					u := srv.URL()
					if tc.path != "" {
						u = srv.Server.URL + tc.path
					}
					err := call.send(t, context.Background(), inv, tc.schema, u)
					if err == nil {
						t.Fatalf("%s succeeded, want an error", call.name)
					}
					if !tc.match(err) {
						t.Errorf("error %q (chain: %s) does not match what the docs promise", err, chain(err))
					}
					want := tc.want
					if tc.byURL && call.name == "Client" {
						want = "POST " + u
					}
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not name %s", err, want)
					}
					if n := len(srv.Requests()); n != tc.seen {
						t.Errorf("the source schema received %d requests, want %d", n, tc.seen)
					}
				})
			}
		}
	}
}

// TestErrorsReloadAfterClose: Reload after Close fails with
// fault.ErrClosed, on every path, and leaves the invoker closed: a Post
// still fails with it, and nothing reaches the new source schema.
func TestErrorsReloadAfterClose(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			srv := newSchemaServer(t, nil)
			inv := newInvoker(t, config(path, "products", srv.URL()))
			inv.Close()
			if err := inv.Reload(config(path, "products", srv.URL())); !errors.Is(err, fault.ErrClosed) {
				t.Errorf("Reload after Close: %v, want fault.ErrClosed", err)
			}
			if _, err := inv.Post(context.Background(), "products", []byte(errQuery)); !errors.Is(err, fault.ErrClosed) {
				t.Errorf("Post after a Reload after Close: %v, want fault.ErrClosed", err)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("the source schema received %d requests, want none", n)
			}
		})
	}
}
