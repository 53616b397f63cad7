package faults_test

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/fusiongo/transport/internal/testsupport/faults"
)

// Start one server and ask it for a fault by its path.
func Example() {
	srv, err := faults.Start(faults.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Post(srv.URL(faults.TooManyRequests), "application/json", strings.NewReader(`{"query":"{ ok }"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.Status, "Retry-After:", resp.Header.Get("Retry-After"))
	// Output: 429 Too Many Requests Retry-After: 1
}
