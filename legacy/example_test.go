package legacy_test

import (
	"compress/gzip"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/fusiongo/transport/legacy"
)

// The legacy path's client alone: it follows a redirect and decodes gzip,
// as Go's defaults do.
func Example() {
	mux := http.NewServeMux()
	mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/graphql", http.StatusFound)
	})
	mux.HandleFunc("/graphql", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		fmt.Fprintf(zw, `{"data":{"acceptEncoding":%q}}`, r.Header.Get("Accept-Encoding"))
		zw.Close()
	})
	products := httptest.NewServer(mux)
	defer products.Close()

	lt, err := legacy.New(legacy.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer lt.Close()

	resp, err := lt.Client().Get(products.URL + "/old")
	if err != nil {
		log.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.Request.URL.Path, string(body))
	// Output:
	// /graphql {"data":{"acceptEncoding":"gzip"}}
}
