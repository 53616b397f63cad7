package sockets_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/fusiongo/transport/sockets"
)

// The owned transport alone, as an http.Client's Transport, against a
// source schema on a loopback address.
func Example() {
	products := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, cookie := r.Header["Cookie"]
		fmt.Fprintf(w, `{"data":{"cookie":%t,"acceptEncoding":%q}}`, cookie, r.Header.Get("Accept-Encoding"))
	}))
	defer products.Close()

	rt, err := sockets.New(sockets.Config{Name: "products", URL: products.URL + "/graphql"})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()
	client := &http.Client{Transport: rt}

	resp, err := client.Post(products.URL+"/graphql", "application/json", strings.NewReader(`{"query":"{ topProducts { name } }"}`))
	if err != nil {
		log.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	st := rt.Stats()
	fmt.Println(resp.Status, string(body))
	fmt.Println("engine:", st.Engine, "connections:", st.Conns, "idle:", st.Idle)
	// Output:
	// 200 OK {"data":{"cookie":false,"acceptEncoding":""}}
	// engine: h1 connections: 1 idle: 1
}
