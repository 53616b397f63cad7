package transport

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/fusiongo/transport/env"
)

// mixed serves the source schemas named in the switch through the sockets
// path and the others through the legacy path: a rollout one source schema
// at a time. Each path owns only the transports of its schemas.
type mixed struct {
	onSockets map[string]bool // fixed at startup, as the switch is
	legacy    Invoker
	sockets   Invoker
}

// newMixed builds both paths, each with its share of the source schemas.
func newMixed(cfg env.Config, build func(env.Config, env.Path) (Invoker, error)) (Invoker, error) {
	m := &mixed{onSockets: map[string]bool{}}
	for _, n := range cfg.SocketsSchemas {
		m.onSockets[n] = true
	}
	leg, sock := m.split(cfg)
	var err error
	if m.sockets, err = build(sock, env.PathSockets); err != nil {
		return nil, err
	}
	if m.legacy, err = build(leg, env.PathLegacy); err != nil {
		m.sockets.Close()
		return nil, err
	}
	return m, nil
}

// split divides cfg's source schemas between the paths.
func (m *mixed) split(cfg env.Config) (legacyCfg, socketsCfg env.Config) {
	legacyCfg, socketsCfg = cfg, cfg
	legacyCfg.Transport, socketsCfg.Transport = env.PathLegacy, env.PathSockets
	legacyCfg.SocketsSchemas, socketsCfg.SocketsSchemas = nil, nil
	legacyCfg.SourceSchemas = map[string]env.SourceSchema{}
	socketsCfg.SourceSchemas = map[string]env.SourceSchema{}
	for name, s := range cfg.SourceSchemas {
		if m.onSockets[name] {
			socketsCfg.SourceSchemas[name] = s
		} else {
			legacyCfg.SourceSchemas[name] = s
		}
	}
	return legacyCfg, socketsCfg
}

func (m *mixed) path(schema string) Invoker {
	if m.onSockets[schema] {
		return m.sockets
	}
	return m.legacy
}

func (m *mixed) Do(ctx context.Context, schema string, req *http.Request) (*http.Response, error) {
	return m.path(schema).Do(ctx, schema, req)
}

func (m *mixed) Post(ctx context.Context, schema string, body []byte) (*http.Response, error) {
	return m.path(schema).Post(ctx, schema, body)
}

// Reload validates cfg whole, then reloads the sockets share first (the one
// that reads files and can still fail), then the legacy share. The split is
// the one chosen at startup: a schema named in the switch stays on sockets.
func (m *mixed) Reload(cfg env.Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("reload rejected, old configuration kept: %w", err)
	}
	for n := range m.onSockets {
		if _, ok := cfg.SourceSchemas[n]; !ok {
			return fmt.Errorf("reload rejected, old configuration kept: source schema %q is on the sockets path by %s and cannot be removed while running", n, env.SwitchVar)
		}
	}
	leg, sock := m.split(cfg)
	if err := m.sockets.Reload(sock); err != nil {
		return err
	}
	return m.legacy.Reload(leg)
}

func (m *mixed) Close() error {
	return errors.Join(m.sockets.Close(), m.legacy.Close())
}

// socketsSchemas lists the schemas on the sockets path, for tests and logs.
func (m *mixed) socketsSchemas() []string {
	var out []string
	for n := range m.onSockets {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
