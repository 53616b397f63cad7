package transport_test

import (
	"crypto/subtle"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
)

// requireAdmin stands for the gateway's own authentication: here a fixed
// bearer token compared in constant time; in a gateway, its session or
// OIDC middleware.
func requireAdmin(token string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, []byte("Bearer "+token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="admin"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ExampleTransport_StatusHandler mounts the status page on an admin mux,
// behind the gateway's own authentication: the page shows no secret, but
// it does show which source schemas a gateway calls and how hard.
func ExampleTransport_StatusHandler() {
	inv, err := transport.New(env.Config{SourceSchemas: map[string]env.SourceSchema{
		"products": {URL: "http://127.0.0.1:4001/graphql"},
	}})
	if err != nil {
		log.Fatal(err)
	}
	defer inv.Close()

	admin := http.NewServeMux()
	admin.Handle("GET /debug/transport", requireAdmin("s3cret", inv.StatusHandler()))
	srv := httptest.NewServer(admin) // in a gateway: its admin listener
	defer srv.Close()

	for _, token := range []string{"", "s3cret"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/debug/transport?format=json", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// Output:
	// 401 text/plain; charset=utf-8
	// 200 application/json
}
