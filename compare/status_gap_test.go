package compare_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/fusiongo/transport/answer"
	"github.com/fusiongo/transport/compare"
)

// TestGapStatusWithinClass: two answers that differ only in their status,
// both in the same class (2xx, 4xx, 5xx),
// with the same headers and an empty body, are a status difference: 204 is
// not 200.
func TestGapStatusWithinClass(t *testing.T) {
	cases := []struct{ a, b int }{
		{http.StatusOK, http.StatusNoContent},
		{http.StatusNoContent, http.StatusOK},
		{http.StatusOK, http.StatusCreated},
		{http.StatusBadRequest, http.StatusNotFound},
		{http.StatusBadGateway, http.StatusServiceUnavailable},
	}
	for _, c := range cases {
		t.Run(strconv.Itoa(c.a)+"/"+strconv.Itoa(c.b), func(t *testing.T) {
			header := http.Header{"Content-Type": {"application/json"}}
			a := answer.Answer{Status: c.a, Header: header.Clone()}
			b := answer.Answer{Status: c.b, Header: header.Clone()}
			diffs := compare.Compare("products", a, b, "legacy", "sockets", compare.Rules{})
			want := answer.Difference{
				Kind:        answer.KindStatus,
				A:           strconv.Itoa(c.a),
				B:           strconv.Itoa(c.b),
				Explanation: "legacy answered " + strconv.Itoa(c.a) + "; sockets answered " + strconv.Itoa(c.b),
			}
			if len(diffs) != 1 || diffs[0].Kind != want.Kind || diffs[0].A != want.A || diffs[0].B != want.B || diffs[0].Explanation != want.Explanation {
				t.Errorf("Compare found %+v, want only %+v", diffs, want)
			}
			if same := compare.Compare("products", a, a, "legacy", "sockets", compare.Rules{}); len(same) != 0 {
				t.Errorf("an answer compared with itself: %+v, want no difference", same)
			}
		})
	}
}
