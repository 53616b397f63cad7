package sockets

import (
	"testing"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/backend"
)

// TestDescribe: a pool says what the request path reads of it: its
// engine (the status page shows it, sockets.Transport.Stats reports it). Only h1
// writes any body as it is; every pool bounds its header wait itself and
// reports its connections and addresses, the same counts its own methods
// give.
func TestDescribe(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		srv := newPoolServer(t, nil, nil)
		tr := openSchemaWith(t, engineSchema(engine, srv.URL, nil), func(*backend.Schema) {})
		ranOn(t, engine, tr)
		d := tr.Describe()
		if d.Engine != engine {
			t.Errorf("Engine = %q, want %q", d.Engine, engine)
		}
		if got, want := d.WritesAnyBody, engine == env.EngineH1; got != want {
			t.Errorf("WritesAnyBody = %v, want %v", got, want)
		}
		if d.Timed == nil || d.Conns == nil || d.Addresses == nil {
			t.Fatalf("Description %+v: want Timed, Conns and Addresses set", d)
		}
		if err := call(t.Context(), tr, srv.URL, "one"); err != nil {
			t.Fatal(err)
		}
		open, idle := d.Conns()
		if wantOpen, wantIdle := tr.Conns(); open != wantOpen || idle != wantIdle || open != 1 {
			t.Errorf("Conns() = %d, %d; want %d, %d with one connection open", open, idle, wantOpen, wantIdle)
		}
		if got, want := len(d.Addresses()), len(tr.Addresses()); got != want {
			t.Errorf("Addresses() gave %d addresses, want %d", got, want)
		}
	})
}
