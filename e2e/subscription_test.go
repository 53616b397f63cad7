package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/gobwas/ws"
	"github.com/jensneuse/abstractlogger"
	nodev1 "github.com/wundergraph/cosmo/router/gen/proto/wg/cosmo/node/v1"
	"github.com/wundergraph/graphql-go-tools/execution/engine"
	"github.com/wundergraph/graphql-go-tools/execution/federationtesting/gateway/httphandler"
	products "github.com/wundergraph/graphql-go-tools/execution/federationtesting/products/graph"
	"github.com/wundergraph/graphql-go-tools/execution/subscription"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/engine/resolve"
	"google.golang.org/protobuf/encoding/protojson"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
)

// subscriptionGuard bounds every wait of TestFederationSubscriptions, only
// so that a broken case fails instead of hanging.
const subscriptionGuard = 10 * time.Second

// connKey is the context key under which the products subgraph's server
// puts each request's net.Conn (its ConnContext).
type connKey struct{}

// trackedConn is a net.Conn accepted by the products subgraph that closes
// closed once, the first time it is closed or a read on it fails (the peer
// went away): a hijacked connection, as a WebSocket's is, is no longer
// reported by http.Server.ConnState.
type trackedConn struct {
	net.Conn
	once   sync.Once
	closed chan struct{}
}

func (c *trackedConn) done() { c.once.Do(func() { close(c.closed) }) }

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.done()
	}
	return n, err
}

func (c *trackedConn) Close() error {
	c.done()
	return c.Conn.Close()
}

// trackedListener wraps every accepted net.Conn in a trackedConn.
type trackedListener struct{ net.Listener }

func (l trackedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &trackedConn{Conn: c, closed: make(chan struct{})}, nil
}

// upgrade is one WebSocket upgrade request as the products subgraph
// received it, with the connection it arrived on.
type upgrade struct {
	header http.Header
	conn   *trackedConn
}

// startProducts starts federationtesting's products subgraph (the one with
// the subscriptions) on a tracked listener; every upgrade request it
// receives is sent on the returned channel.
func startProducts(t *testing.T) (*httptest.Server, <-chan upgrade) {
	t.Helper()
	upgrades := make(chan upgrade, 16)
	h := products.GraphQLEndpointHandler(products.TestOptions)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			c, _ := r.Context().Value(connKey{}).(*trackedConn)
			upgrades <- upgrade{header: r.Header.Clone(), conn: c}
		}
		h.ServeHTTP(w, r)
	}))
	srv.Listener = trackedListener{srv.Listener}
	srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, c)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, upgrades
}

// startSubscriptionGateway starts graphql-go-tools' federation gateway as
// federationtesting's gateway.NewGateway builds it (the same engine
// configuration factory, with client as the subgraph client and thus as
// the subscription client's upgrade client; the same execution engine; the
// same legacy graphql-ws subscription handler on a gobwas/ws upgrade),
// wrapped in transport.GatewayRequestHandler, with one difference: the subscriptions
// of a WebSocket run in the context of the client's upgrade request
// (without its cancellation, which net/http fires as soon as the handler
// returns after the hijack), where gateway.NewGateway runs them in
// context.Background(). Without that, no gateway request reaches the
// subgraph client and no header can be forwarded on the upgrade, whatever
// the client.
func startSubscriptionGateway(t *testing.T, routerConfig []byte, client *http.Client) *httptest.Server {
	t.Helper()
	var rc nodev1.RouterConfig
	if err := protojson.Unmarshal(routerConfig, &rc); err != nil {
		t.Fatalf("router config: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory := engine.NewFederationEngineConfigFactory(ctx, engine.WithFederationHttpClient(client))
	engineConfig, err := factory.BuildEngineConfiguration(&rc)
	if err != nil {
		t.Fatalf("BuildEngineConfiguration: %v", err)
	}
	logger := abstractlogger.NoopLogger
	ee, err := engine.NewExecutionEngine(ctx, logger, engineConfig, resolve.ResolverOptions{MaxConcurrency: 1024})
	if err != nil {
		t.Fatalf("NewExecutionEngine: %v", err)
	}
	upgrader := &ws.HTTPUpgrader{Header: http.Header{}}
	var wg sync.WaitGroup
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			http.Error(w, "this test gateway serves subscriptions over WebSocket only", http.StatusBadRequest)
			return
		}
		conn, _, _, err := upgrader.Upgrade(r, w)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		subCtx := context.WithoutCancel(r.Context())
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			handler, err := subscription.NewHandler(logger, httphandler.NewWebsocketSubscriptionClient(logger, conn), subscription.NewExecutorV2Pool(ee, subCtx))
			if err != nil {
				return
			}
			handler.Handle(subCtx) // until the client goes
		}()
	})
	srv := httptest.NewServer(transport.GatewayRequestHandler(h))
	t.Cleanup(func() {
		srv.Close()
		wg.Wait()
	})
	return srv
}

// wsMessage is a message of the legacy graphql-ws protocol
// (subscriptions-transport-ws) that the gateway's handler speaks.
type wsMessage struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// subscriptionQuery is federationtesting/testdata/subscriptions/subscription.query.
const subscriptionQuery = `subscription UpdatePrice($upc: String!) { updateProductPrice(upc: $upc) { upc name price } }`

// TestFederationSubscriptions subscribes to the products subgraph's
// updateProductPrice through graphql-go-tools' federation gateway over
// WebSocket, with http.DefaultClient (the control) and the library's
// Transport.Client on legacy, sockets/nethttp and sockets/h1 as the gateway's
// subgraph client, which the engine also uses as its WebSocket upgrade
// client. Each case must receive three price updates, the subgraph's
// upgrade request must carry the forwarded headers (through the library
// only), and when the test client closes, the subscription must end and
// the subgraph must see its WebSocket connection close.
//
// The gateway serves subscriptions over WebSocket only (its handler
// upgrades, or executes a GraphQL-over-HTTP request: no SSE), so there is
// no SSE case.
func TestFederationSubscriptions(t *testing.T) {
	cases := []struct {
		name string
		set  func(*env.Config) // nil: http.DefaultClient, not the library
	}{
		{"control", nil},
		{"legacy", func(c *env.Config) { c.Path = env.PathLegacy }},
		{"sockets-nethttp", func(c *env.Config) { c.Path = env.PathSockets; c.Defaults.Engine = env.EngineNetHTTP }},
		{"sockets-h1", func(c *env.Config) { c.Path = env.PathSockets; c.Defaults.Engine = env.EngineH1 }},
	}
	for _, tc := range cases {
		t.Run(tc.name+"/websocket", func(t *testing.T) {
			sg := startSubgraphs(t, nil)
			prods, upgrades := startProducts(t)
			sg.products.Close()
			sg.products = prods

			client := http.DefaultClient
			if tc.set != nil {
				cfg := sg.transportConfig()
				tc.set(&cfg)
				inv, err := transport.New(cfg)
				if err != nil {
					t.Fatalf("transport.New: %v", err)
				}
				t.Cleanup(func() { inv.Close() })
				client = inv.Client()
			}
			gw := startSubscriptionGateway(t, sg.routerConfig(), client)

			ctx, cancel := context.WithTimeout(t.Context(), subscriptionGuard)
			defer cancel()
			auth, requestID := "Bearer "+tc.name+"-user", tc.name+"/subscription"
			conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(gw.URL, "http"), &websocket.DialOptions{
				HTTPHeader: http.Header{"Authorization": {auth}, "X-Request-Id": {requestID}},
			})
			if err != nil {
				t.Fatalf("dial the gateway: %v", err)
			}
			defer conn.CloseNow()

			write := func(m wsMessage) {
				t.Helper()
				b, err := json.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
					t.Fatalf("write %s: %v", m.Type, err)
				}
			}
			read := func() wsMessage {
				t.Helper()
				for {
					_, b, err := conn.Read(ctx)
					if err != nil {
						t.Fatalf("read from the gateway: %v", err)
					}
					var m wsMessage
					if err := json.Unmarshal(b, &m); err != nil {
						t.Fatalf("gateway message %s: %v", b, err)
					}
					if m.Type != subscription.MessageTypeConnectionKeepAlive {
						return m
					}
				}
			}

			write(wsMessage{Type: subscription.MessageTypeConnectionInit})
			if m := read(); m.Type != subscription.MessageTypeConnectionAck {
				t.Fatalf("after connection_init: %+v, want connection_ack", m)
			}
			payload, err := json.Marshal(map[string]any{"query": subscriptionQuery, "variables": map[string]string{"upc": "top-1"}})
			if err != nil {
				t.Fatal(err)
			}
			write(wsMessage{ID: "1", Type: subscription.MessageTypeStart, Payload: payload})

			// Three price updates, as graphql-go-tools' own federation
			// integration test expects them.
			eventsOK := true
			for price := 1; price <= 3 && eventsOK; price++ {
				m := read()
				want := fmt.Sprintf(`{"data":{"updateProductPrice":{"upc":"top-1","name":"Trilby","price":%d}}}`, price)
				if m.ID != "1" || m.Type != subscription.MessageTypeData || string(m.Payload) != want {
					t.Errorf("event %d: id %q type %q payload %s, want id \"1\" type data payload %s", price, m.ID, m.Type, m.Payload, want)
					eventsOK = false
				}
			}

			// The subgraph's upgrade request: through the library it
			// carries the forwarded headers; through http.DefaultClient,
			// neither (the engine forwards none itself). It is on the
			// channel by now: the subgraph records it before it answers
			// the upgrade, and the gateway answered after that answer.
			var up upgrade
			select {
			case up = <-upgrades:
			default:
				t.Fatal("the products subgraph saw no upgrade request")
			}
			if !eventsOK {
				t.Logf("the subgraph's upgrade request had Authorization %q, X-Request-Id %q", up.header.Get("Authorization"), up.header.Get("X-Request-Id"))
			}
			wantAuth, wantID := auth, requestID
			if tc.set == nil {
				wantAuth, wantID = "", ""
			}
			if got := up.header.Get("Authorization"); got != wantAuth {
				t.Errorf("upgrade request's Authorization %q, want %q", got, wantAuth)
			}
			if got := up.header.Get("X-Request-Id"); got != wantID {
				t.Errorf("upgrade request's X-Request-Id %q, want %q", got, wantID)
			}
			if up.conn == nil {
				t.Fatal("the upgrade request's connection is not tracked")
			}
			if !eventsOK {
				t.FailNow()
			}

			// The test client closes: the subscription ends (the close
			// handshake completes) and the subgraph's WebSocket
			// connection closes.
			if err := conn.Close(websocket.StatusNormalClosure, "done"); err != nil {
				t.Errorf("closing the gateway WebSocket: %v", err)
			}
			select {
			case <-up.conn.closed:
			case <-ctx.Done():
				t.Fatal("the products subgraph's WebSocket connection did not close after the client closed")
			}
			select {
			case u := <-upgrades:
				t.Errorf("a second upgrade request reached the subgraph: %v", u.header)
			default:
			}
		})
	}
}
