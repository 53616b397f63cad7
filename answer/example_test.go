package answer_test

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/fusiongo/transport/answer"
	"github.com/fusiongo/transport/compare"
)

// Example compares two answers to one request with package compare and
// prints each Difference in the JSON form that compare's reports and
// shadow's publishers share.
func Example() {
	legacy := answer.Answer{
		Status: 200,
		Header: http.Header{"Content-Type": {"application/json"}, "Set-Cookie": {"session=1"}},
		Body:   []byte(`{"data":{"price":899}}`),
	}
	sockets := answer.Answer{
		Status: 200,
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   []byte(`{"data":{"price":900}}`),
	}
	for _, d := range compare.Compare("products", legacy, sockets, "legacy", "sockets", compare.Rules{}) {
		d.Diff = "" // go-cmp's text diff is not meant to be stable
		text, err := json.Marshal(d)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(string(text))
	}
	// Output:
	// {"kind":"header","path":"Set-Cookie","a":"[REDACTED]","explanation":"legacy has Set-Cookie \"[REDACTED]\"; sockets has none"}
	// {"kind":"body","path":"data.price","a":"899","b":"900","explanation":"legacy has 899 at data.price; sockets has 900"}
}
