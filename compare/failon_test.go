package compare_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fusiongo/transport/answer"
	"github.com/fusiongo/transport/compare"
)

func TestParseFailOn(t *testing.T) {
	valid := []struct {
		spec string
		want []compare.Limit
		text string // String()
	}{
		{"any", []compare.Limit{{}}, "total>0"},
		{" ANY ", []compare.Limit{{}}, "total>0"},
		{"none", nil, "none"},
		{"status>0", []compare.Limit{{Kind: answer.KindStatus}}, "status>0"},
		{"status>0,body>2%", []compare.Limit{{Kind: answer.KindStatus}, {Kind: answer.KindBody, Max: 2, Percent: true}}, "status>0,body>2%"},
		{" header > 3 , error>0.5% ", []compare.Limit{{Kind: answer.KindHeader, Max: 3}, {Kind: answer.KindError, Max: 0.5, Percent: true}}, "header>3,error>0.5%"},
		{"redirect>0,timing>10%,total>100", []compare.Limit{{Kind: answer.KindRedirect}, {Kind: answer.KindTiming, Max: 10, Percent: true}, {Max: 100}}, "redirect>0,timing>10%,total>100"},
		{"body>100%", []compare.Limit{{Kind: answer.KindBody, Max: 100, Percent: true}}, "body>100%"},
		{"Body>1", []compare.Limit{{Kind: answer.KindBody, Max: 1}}, "body>1"},
	}
	for _, tt := range valid {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := compare.ParseFailOn(tt.spec)
			if err != nil {
				t.Fatalf("ParseFailOn(%q): %v", tt.spec, err)
			}
			if diff := cmp.Diff(tt.want, got.Limits, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("limits mismatch (-want +got):\n%s", diff)
			}
			if got.String() != tt.text {
				t.Errorf("String() = %q, want %q", got.String(), tt.text)
			}
		})
	}

	invalid := []struct{ spec, wantErr string }{
		{"", `invalid fail-on spec "": empty; want any, none or thresholds such as status>0,body>2%`},
		{"  ", `invalid fail-on spec "  ": empty`},
		{"stat>0", `invalid fail-on spec "stat>0": threshold "stat>0": unknown kind "stat": want status, header, body, error, redirect, timing or total`},
		{"body", `invalid fail-on spec "body": threshold "body": want KIND>N or KIND>N%, such as body>2%`},
		{"body>=1", `threshold "body>=1": "=1" is not a number of requests (like 3) or a percentage (like 2.5%)`},
		{"body>", `threshold "body>": "" is not a number`},
		{"body>x%", `threshold "body>x%": "x" is not a number`},
		{"body>-1", `"-1" is not a number`},
		{"body>1e3", `"1e3" is not a number`},
		{"body>inf", `"inf" is not a number`},
		{"body>1.5", `threshold "body>1.5": 1.5 is not a whole number of requests; for a share write 1.5%`},
		{"body>101%", `threshold "body>101%": 101% is more than 100%, so it could never be exceeded`},
		{"status>0,,body>1", `invalid fail-on spec "status>0,,body>1": an empty threshold between commas`},
		{"status>0,", `an empty threshold between commas`},
		{"any,status>0", `"any" stands alone, not among thresholds`},
		{"status>0,none", `"none" stands alone`},
		{"status<1", `threshold "status<1": want KIND>N`},
	}
	for _, tt := range invalid {
		t.Run("invalid "+tt.spec, func(t *testing.T) {
			_, err := compare.ParseFailOn(tt.spec)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseFailOn(%q) = %v, want an error containing %q", tt.spec, err, tt.wantErr)
			}
		})
	}
}

func FuzzParseFailOn(f *testing.F) {
	for _, s := range []string{"any", "none", "status>0,body>2%", "total>1.5%", "x>1", ",", "body>1e9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		got, err := compare.ParseFailOn(spec)
		if err != nil {
			return
		}
		// What parses prints as something that parses to the same limits.
		again, err := compare.ParseFailOn(got.String())
		if err != nil {
			t.Fatalf("ParseFailOn(%q).String() = %q does not parse: %v", spec, got.String(), err)
		}
		if !cmp.Equal(got.Limits, again.Limits, cmpopts.EquateEmpty()) {
			t.Fatalf("%q: %v, then %v", spec, got.Limits, again.Limits)
		}
	})
}

// reportOf builds a report of n requests r0, r1, ... whose differences are
// given by kinds: one Difference per listed kind, for the first requests.
func reportOf(n int, kinds ...[]answer.Kind) *compare.Report {
	r := &compare.Report{A: "legacy", B: "sockets"}
	for i := range n {
		res := compare.Result{Name: fmt.Sprintf("r%d", i), Schema: "accounts"}
		if i < len(kinds) {
			for _, k := range kinds[i] {
				res.Differences = append(res.Differences, answer.Difference{Kind: k, Explanation: string(k) + " differs"})
			}
		}
		r.Results = append(r.Results, res)
	}
	return r
}

func TestFailOnCheck(t *testing.T) {
	// 50 requests: 1 with a status and a body difference, 2 more with a
	// body difference, 1 with two header differences.
	report := reportOf(50,
		[]answer.Kind{answer.KindStatus, answer.KindBody},
		[]answer.Kind{answer.KindBody},
		[]answer.Kind{answer.KindBody},
		[]answer.Kind{answer.KindHeader, answer.KindHeader},
	)
	tests := []struct {
		spec string
		want []string // Breach.String()
	}{
		{"none", nil},
		{"any", []string{"total>0: 4 of 50 requests (8%) have a difference"}},
		{"status>0", []string{"status>0: 1 of 50 requests (2%) has a status difference"}},
		{"status>1", nil},
		{"body>2", []string{"body>2: 3 of 50 requests (6%) have a body difference"}},
		{"body>3", nil},
		{"body>5%", []string{"body>5%: 3 of 50 requests (6%) have a body difference"}},
		{"body>6%", nil},  // exactly 6% is not over
		{"header>1", nil}, // two header differences in one request count once
		{"header>0,error>0,redirect>0,timing>0", []string{"header>0: 1 of 50 requests (2%) has a header difference"}},
		{"total>7.9%,total>8%", []string{"total>7.9%: 4 of 50 requests (8%) have a difference"}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			f, err := compare.ParseFailOn(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, b := range f.Check(report) {
				got = append(got, b.String())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Check mismatch (-want +got):\n%s", diff)
			}
		})
	}
	if got := (compare.FailOn{}).Check(report); got != nil {
		t.Errorf("the zero FailOn failed: %v", got)
	}
	empty, _ := compare.ParseFailOn("total>0%")
	if got := empty.Check(&compare.Report{}); got != nil {
		t.Errorf("an empty report failed a percentage: %v", got)
	}
}
