package transport_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
)

// ExampleTransport_PostFunc reads a source schema's answer inside the
// callback, into a buffer the caller keeps: the response is borrowed, and
// on the h1 engine the call allocates next to nothing.
func ExampleTransport_PostFunc() {
	products := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"data":{"name":"chair"}}`)
	}))
	defer products.Close()

	inv, err := transport.New(env.Config{
		Path:          env.PathSockets,
		SourceSchemas: map[string]env.SourceSchema{"products": {URL: products.URL + "/graphql"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer inv.Close()

	var answer bytes.Buffer // the caller's: it outlives the callback
	err = inv.PostFunc(context.Background(), "products", []byte(`{"query":"{ name }"}`), func(resp *http.Response) error {
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %s", resp.Status)
		}
		_, err := answer.ReadFrom(resp.Body) // resp and its body are gone once this returns
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(answer.String())
	// Output: {"data":{"name":"chair"}}
}
