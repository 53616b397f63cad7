package env_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/fusiongo/transport/env"
)

func ExampleLoad() {
	dir, err := os.MkdirTemp("", "env-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "transport.yaml")
	yaml := `
defaults:
  conn_lifetime: 5m
  max_conns_per_host: 64
source_schemas:
  products:
    url: http://127.0.0.1:4001/graphql
    conn_lifetime: 30s
  reviews:
    url: http://127.0.0.1:4002/graphql
    max_conns_per_host: 0 # no limit
`
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		log.Fatal(err)
	}

	// env.Load(path) reads the process environment; a Loader takes the
	// environment as a function, here a fixed one.
	vars := map[string]string{
		"FUSION_SOCKETS_TRANSPORT": "1",
		"FUSION_FORWARD_HEADERS":   "Authorization, X-Request-Id",
	}
	cfg, err := env.Loader{LookupEnv: func(key string) (string, bool) {
		v, ok := vars[key]
		return v, ok
	}}.Load(path)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("path:", cfg.EffectivePath())
	fmt.Println("forward headers:", cfg.ForwardHeaders)
	for _, name := range []string{"products", "reviews"} {
		s, _ := cfg.Effective(name)
		maxConns := fmt.Sprint(s.MaxConnsPerHost)
		if s.MaxConnsPerHost == env.NoLimit {
			maxConns = "no limit"
		}
		fmt.Printf("%s: connect %v, lifetime %v, max conns %s\n", name, s.ConnectTimeout, s.ConnLifetime, maxConns)
	}
	// Output:
	// path: sockets
	// forward headers: [Authorization X-Request-Id]
	// products: connect 15s, lifetime 30s, max conns 64
	// reviews: connect 15s, lifetime 5m0s, max conns no limit
}
