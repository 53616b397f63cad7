package sockets

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/fusiongo/transport/env"
)

// Options are the Go-only settings of the path.
type Options struct {
	Logger    *slog.Logger
	LookupEnv func(string) (string, bool)
}

// Invoker is the sockets path.
type Invoker struct{}

// New builds the sockets path.
func New(cfg env.Config, opts Options) (*Invoker, error) { return nil, errors.New("not yet") }

func (i *Invoker) Do(ctx context.Context, schema string, req *http.Request) (*http.Response, error) {
	return nil, errors.New("not yet")
}
func (i *Invoker) Post(ctx context.Context, schema string, body []byte) (*http.Response, error) {
	return nil, errors.New("not yet")
}
func (i *Invoker) Reload(cfg env.Config) error { return errors.New("not yet") }
func (i *Invoker) Close() error                { return nil }
