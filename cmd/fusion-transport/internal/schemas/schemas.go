// Package schemas runs the four source schemas of the public GraphQL gateway
// benchmark (The Guild's graphql-gateways-benchmark, federation/subgraphs):
// accounts, inventory, products and reviews, as real GraphQL-over-HTTP
// servers with the benchmark's demo data. Tests, the compare harness and the
// benchmarks send the transport's requests to them.
//
// Each schema is an Apollo Federation (v1) subgraph: it answers
// _service { sdl } and _entities(representations:) for the entity fields it
// owns, so the per-wave fetches of the benchmark's deep-recursion query can be
// replayed against them. The handlers accept single requests, request batches
// (a JSON array of requests) and variable batches ("variables" is an array)
// and answer deterministically: the same request gives the same bytes.
//
// Started with Start, each schema serves automatic persisted queries (APQ,
// as Apollo Server and gqlgen do: a request by the SHA-256 of its query
// runs the text kept under it, or is answered PersistedQueryNotFound),
// unless Options.APQ says otherwise: NotSupported refuses them as Apollo
// Server does with APQ off, Off answers a request without a query as a
// schema that knows nothing of APQ does (400 and a request error).
// Servers.ForgetPersistedQueries forgets every hash, as a restart would.
//
//	srv, err := schemas.Start(schemas.Options{})
//	if err != nil { ... }
//	defer srv.Close()
//	resp, err := http.Post(srv.URLs["accounts"], "application/json",
//		strings.NewReader(`{"query":"{ users { id name } }"}`))
package schemas

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	graphql "github.com/graph-gophers/graphql-go"

	"github.com/fusiongo/transport/internal/testsupport/apqserve"
)

// Names lists the source schemas in a stable order.
var Names = []string{"accounts", "inventory", "products", "reviews"}

// Options configure the servers. The zero value serves without delay.
type Options struct {
	// Latency is a fixed delay before each request is answered (the
	// benchmark's constant-latency mode). Zero: none. A batch is one request
	// and waits once. The wait ends early, without an answer, when the
	// request's context ends (the client went away).
	Latency time.Duration

	// APQ is how Start's servers treat automatic persisted queries:
	// apqserve.On (the zero value) serves them; apqserve.NotSupported
	// answers PersistedQueryNotSupported; apqserve.Off serves without
	// them, so a request by its hash alone gets 400 and "the request has
	// no query". The last two try a client's fallback.
	APQ apqserve.Mode
	// CacheControl, if not empty, is the Cache-Control header of every
	// answer of the servers Start runs (the benchmarks' cache mode:
	// "public, max-age=60"). Handler ignores it. Empty: none.
	CacheControl string
}

// Path is the endpoint path of every schema started by Start.
const Path = "/graphql"

// schemaSources maps each name to its executable SDL and root resolver.
var schemaSources = map[string]struct {
	sdl  string
	root any
}{
	"accounts":  {accountsSchema, &accountsQuery{}},
	"inventory": {inventorySchema, &inventoryQuery{}},
	"products":  {productsSchema, &productsQuery{}},
	"reviews":   {reviewsSchema, &reviewsQuery{}},
}

// parsed holds each schema, parsed once: a graphql.Schema is safe for
// concurrent use, so every handler of a name shares it.
var parsed = func() map[string]func() (*graphql.Schema, error) {
	m := make(map[string]func() (*graphql.Schema, error), len(schemaSources))
	for name, src := range schemaSources {
		m[name] = sync.OnceValues(func() (*graphql.Schema, error) {
			return graphql.ParseSchema(src.sdl, src.root)
		})
	}
	return m
}()

// Handler returns the GraphQL-over-HTTP handler of the named schema, or an
// error naming it if unknown. The handler answers on any path; Start mounts it
// at Path.
func Handler(name string, opts Options) (http.Handler, error) {
	parse, ok := parsed[name]
	if !ok {
		return nil, fmt.Errorf("source schema %q: unknown (known: %v)", name, Names)
	}
	s, err := parse()
	if err != nil {
		return nil, fmt.Errorf("source schema %q: %w", name, err)
	}
	return &handler{schema: s, latency: opts.Latency}, nil
}

// Servers are the four schemas listening on loopback.
type Servers struct {
	// URLs maps each schema name to its GraphQL endpoint, e.g.
	// http://127.0.0.1:41234/graphql
	URLs map[string]string

	servers   []*http.Server
	serving   sync.WaitGroup               // the Serve goroutines
	persisted map[string]*apqserve.Handler // immutable after Start: each schema's APQ; empty with apqserve.Off

	mu        sync.Mutex
	closed    bool           // set by Close; no handler starts after it
	handling  sync.WaitGroup // handlers under way; Add only under mu while !closed
	serveErrs []error

	closeOnce sync.Once
	closeErr  error
}

// track wraps h so that Close can wait for the handlers under way; net/http's
// Close does not.
func (s *Servers) track(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			http.Error(w, "server closed", http.StatusServiceUnavailable)
			return
		}
		s.handling.Add(1)
		s.mu.Unlock()
		defer s.handling.Done()
		h.ServeHTTP(w, r)
	})
}

// Start starts each schema on its own 127.0.0.1:0 listener with net/http
// servers, at Path, with the count of its requests at CallsPath (Mount).
// Close them with Close.
func Start(opts Options) (*Servers, error) {
	s := &Servers{URLs: make(map[string]string, len(Names)), persisted: map[string]*apqserve.Handler{}}
	for _, name := range Names {
		h, err := Handler(name, opts)
		if err != nil {
			return nil, errors.Join(err, s.Close())
		}
		if opts.APQ != apqserve.Off {
			apq := apqserve.New(h, apqserve.Options{Mode: opts.APQ})
			s.persisted[name], h = apq, apq
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			err = fmt.Errorf("source schema %q: listen: %w", name, err)
			return nil, errors.Join(err, s.Close())
		}
		mux := http.NewServeMux()
		Mount(mux, s.track(h), opts.CacheControl)
		srv := &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 10 * time.Second,
		}
		s.servers = append(s.servers, srv)
		s.URLs[name] = "http://" + ln.Addr().String() + Path
		s.serving.Add(1)
		go func() {
			defer s.serving.Done()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.mu.Lock()
				s.serveErrs = append(s.serveErrs, fmt.Errorf("source schema %q: serve: %w", name, err))
				s.mu.Unlock()
			}
		}()
	}
	return s, nil
}

// ForgetPersistedQueries makes every schema forget the query texts it
// keeps under their hashes, as a restart would: the next request by a hash
// alone is answered PersistedQueryNotFound.
func (s *Servers) ForgetPersistedQueries() {
	for _, h := range s.persisted {
		h.Forget()
	}
}

// PersistedQueryStats returns what each schema did with persisted queries
// so far; nil with apqserve.Off.
func (s *Servers) PersistedQueryStats() map[string]apqserve.Stats {
	return apqserve.StatsOf(s.persisted)
}

// Close stops the servers, closing their listeners and connections at once,
// and waits for their goroutines, the handlers under way included, to end.
// Closing a connection ends its requests' contexts, so a handler waiting out
// Options.Latency returns promptly. Close returns the errors of closing and
// serving; calling it again returns the same.
func (s *Servers) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		var errs []error
		for _, srv := range s.servers {
			if err := srv.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		s.serving.Wait()
		s.handling.Wait()
		s.mu.Lock()
		errs = append(errs, s.serveErrs...)
		s.mu.Unlock()
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}
