package compare_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fusiongo/transport/answer"
	"github.com/fusiongo/transport/compare"
)

func TestGroups(t *testing.T) {
	same := answer.Difference{Kind: answer.KindBody, Path: "data.name", Explanation: `legacy has "Ann" at data.name; sockets has "Anna"`}
	other := answer.Difference{Kind: answer.KindStatus, Explanation: "legacy answered 200; sockets answered 502"}
	report := &compare.Report{A: "legacy", B: "sockets"}
	for i, name := range []string{"r1", "r2", "r3", "r4", "r5", "r6", "r7", "ok"} {
		res := compare.Result{Name: name, Schema: "reviews"}
		switch {
		case name == "ok":
		case i == 0:
			res.Differences = []answer.Difference{other, same}
		default:
			res.Differences = []answer.Difference{same}
		}
		report.Results = append(report.Results, res)
	}
	want := []compare.Group{
		{Kind: answer.KindBody, Path: "data.name", Explanation: same.Explanation, Requests: []string{"r1", "r2", "r3", "r4", "r5", "r6", "r7"}},
		{Kind: answer.KindStatus, Explanation: other.Explanation, Requests: []string{"r1"}},
	}
	if diff := cmp.Diff(want, report.Groups()); diff != "" {
		t.Errorf("Groups mismatch (-want +got):\n%s", diff)
	}

	var buf bytes.Buffer
	if err := report.WriteGroups(&buf); err != nil {
		t.Fatal(err)
	}
	wantText := `2 distinct differences in 7 requests:
body data.name: legacy has "Ann" at data.name; sockets has "Anna" (7 requests)
     r1, r2, r3, r4, r5 and 2 more
status: legacy answered 200; sockets answered 502 (1 request)
     r1
`
	if diff := cmp.Diff(wantText, buf.String()); diff != "" {
		t.Errorf("WriteGroups mismatch (-want +got):\n%s", diff)
	}

	buf.Reset()
	if err := reportOf(3).WriteGroups(&buf); err != nil || buf.Len() != 0 {
		t.Errorf("WriteGroups of an identical report wrote %q, %v; want nothing", buf.String(), err)
	}
}

// secretServer answers each side with its own secret in sensitive headers,
// and the same body, so that the only differences are in headers whose
// values must never be published.
func secretServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		side := r.Header.Get("X-Side")
		w.Header().Set("Set-Cookie", "session=SECRET-"+side)
		w.Header().Set("X-Api-Key", "SECRET-KEY-"+side)
		w.Header().Set("Authorization", "Bearer SECRET-"+side)
		if r.URL.Query().Get("case") == "body" {
			io.WriteString(w, `{"data":{"side":"`+side+`","tag":"<a&b>"}}`)
			return
		}
		io.WriteString(w, `{"data":{}}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// secretReport runs a small corpus against secretServer.
func secretReport(t *testing.T) *compare.Report {
	t.Helper()
	srv := secretServer(t)
	urls := map[string]string{"accounts": srv.URL + "/graphql"}
	corpus := []compare.Request{
		{Name: "accounts/a", Schema: "accounts", Body: []byte(usersQuery), Headers: map[string]string{"Authorization": "Bearer SECRET-GATEWAY"}},
		{Name: "accounts/b", Schema: "accounts", Method: "POST", Path: "?case=body", Body: []byte(usersQuery)},
	}
	report, err := compare.Run(context.Background(), corpus,
		compare.Side{Name: "legacy", Invoker: sideSpec{forward: []string{"Authorization"}}.invoker(t, "legacy", urls)},
		compare.Side{Name: "sockets", Invoker: sideSpec{}.invoker(t, "sockets", urls)},
		compare.Options{URLs: urls, Rules: compare.Rules{Redact: []string{"X-Api-Key"}}})
	if err != nil {
		t.Fatal(err)
	}
	return report
}

// TestReportNeverHoldsSecrets writes a report in every form and looks for
// the secrets.
func TestReportNeverHoldsSecrets(t *testing.T) {
	report := secretReport(t)
	if report.Identical() {
		t.Fatal("the report has no differences: the test would prove nothing")
	}
	for _, res := range report.Results {
		for _, o := range []answer.Answer{res.A, res.B} {
			for _, name := range []string{"Set-Cookie", "X-Api-Key", "Authorization"} {
				if got := o.Header.Get(name); got != answer.Redacted {
					t.Errorf("%s: the report keeps %s %q, want %q", res.Name, name, got, answer.Redacted)
				}
			}
		}
	}
	var text, groups, js, junit bytes.Buffer
	for _, w := range []struct {
		name  string
		write func() error
	}{
		{"Write", func() error { return report.Write(&text) }},
		{"WriteGroups", func() error { return report.WriteGroups(&groups) }},
		{"WriteJSON", func() error { return report.WriteJSON(&js) }},
		{"WriteJUnit", func() error { return report.WriteJUnit(&junit, "") }},
	} {
		if err := w.write(); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
	}
	for name, out := range map[string]string{"Write": text.String(), "WriteGroups": groups.String(), "WriteJSON": js.String(), "WriteJUnit": junit.String()} {
		if strings.Contains(out, "SECRET") {
			t.Errorf("%s publishes a secret:\n%s", name, out)
		}
		if !strings.Contains(out, "[REDACTED]") {
			t.Errorf("%s does not show the redacted header differences:\n%s", name, out)
		}
	}
	if !strings.Contains(text.String(), "header Set-Cookie: legacy and sockets have different Set-Cookie values ([REDACTED])") {
		t.Errorf("Write:\n%s", text.String())
	}
}

func TestWriteJSON(t *testing.T) {
	report := secretReport(t)
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var got struct {
		A, B   string
		Counts struct {
			Requests, Identical, Different int
		}
		Kinds   map[string]int
		Groups  []compare.Group
		Results []struct {
			Name, Schema string
			Identical    bool
			A, B         struct {
				Status    int
				ElapsedMS float64 `json:"elapsed_ms"`
				BodyBytes int     `json:"body_bytes"`
				URL       string
			}
			Differences []answer.Difference
		}
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("the JSON does not parse: %v\n%s", err, buf.String())
	}
	if got.A != "legacy" || got.B != "sockets" || got.Counts.Requests != 2 || got.Counts.Different != 2 {
		t.Errorf("header of the JSON report: %+v", got)
	}
	if got.Kinds["header"] != 2 || got.Kinds["body"] != 1 || got.Kinds["status"] != 0 || len(got.Kinds) != 6 {
		t.Errorf("kinds = %v, want 2 header, 1 body, 0 of the other four", got.Kinds)
	}
	if len(got.Results) != 2 || got.Results[1].Name != "accounts/b" || got.Results[1].A.Status != 200 || got.Results[1].A.BodyBytes == 0 || got.Results[1].A.ElapsedMS <= 0 {
		t.Errorf("results = %+v", got.Results)
	}
	// The first group is shared by both requests.
	if len(got.Groups) == 0 || !cmp.Equal(got.Groups[0].Requests, []string{"accounts/a", "accounts/b"}) {
		t.Errorf("groups = %+v", got.Groups)
	}
	if d := got.Results[1].Differences; len(d) == 0 || d[len(d)-1].Path != "data.side" {
		t.Errorf("differences of accounts/b = %+v, want the body difference at data.side last", d)
	}
}

func TestWriteJUnit(t *testing.T) {
	report := secretReport(t)
	report.Results = append(report.Results, compare.Result{
		Name: "accounts/ok", Schema: "accounts",
		A:     answer.Answer{Status: 200, Elapsed: 1500 * time.Millisecond},
		B:     answer.Answer{Status: 200, Elapsed: 500 * time.Millisecond},
		Notes: []string{"a note <with> markup & more"},
	})
	var buf bytes.Buffer
	if err := report.WriteJUnit(&buf, ""); err != nil {
		t.Fatal(err)
	}
	type failure struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
	var got struct {
		XMLName  xml.Name
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
			Cases    []struct {
				Name      string   `xml:"name,attr"`
				Classname string   `xml:"classname,attr"`
				Time      string   `xml:"time,attr"`
				Failure   *failure `xml:"failure"`
				SystemOut string   `xml:"system-out"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("the XML does not parse: %v\n%s", err, buf.String())
	}
	if !strings.HasPrefix(buf.String(), `<?xml version="1.0" encoding="UTF-8"?>`) {
		t.Errorf("no XML declaration:\n%s", buf.String())
	}
	if got.XMLName.Local != "testsuites" || got.Tests != 3 || got.Failures != 2 || len(got.Suites) != 1 {
		t.Fatalf("root: %+v", got)
	}
	s := got.Suites[0]
	if s.Name != "compare legacy vs sockets" || s.Tests != 3 || s.Failures != 2 || len(s.Cases) != 3 {
		t.Fatalf("suite: %+v", s)
	}
	b := s.Cases[1]
	if b.Name != "accounts/b" || b.Classname != "compare.accounts" || b.Failure == nil {
		t.Fatalf("testcase accounts/b: %+v", b)
	}
	if !strings.Contains(b.Failure.Message, `legacy has "legacy" at data.side; sockets has "sockets"`) {
		t.Errorf("failure message lacks the body explanation: %q", b.Failure.Message)
	}
	if !strings.Contains(b.Failure.Message, "; ") || b.Failure.Type != "header,body" {
		t.Errorf("failure message %q, type %q; want explanations joined by \"; \", type header,body", b.Failure.Message, b.Failure.Type)
	}
	if !strings.Contains(b.Failure.Text, "body data.side: ") || !strings.Contains(b.Failure.Text, "(-legacy +sockets):") {
		t.Errorf("failure text:\n%s", b.Failure.Text)
	}
	ok := s.Cases[2]
	if ok.Failure != nil || ok.Time != "2.000" || ok.SystemOut != "a note <with> markup & more" {
		t.Errorf("testcase accounts/ok: %+v", ok)
	}
	if strings.Contains(buf.String(), "<with>") {
		t.Errorf("the note's markup is not escaped:\n%s", buf.String())
	}
}

func TestWriteJUnitInvalidCharacters(t *testing.T) {
	report := &compare.Report{A: "legacy", B: "sockets", Results: []compare.Result{{
		Name: "bad\x00name", Schema: "s",
		Differences: []answer.Difference{{Kind: answer.KindBody, Explanation: "a body with \x01 and \"quotes\""}},
	}}}
	var buf bytes.Buffer
	if err := report.WriteJUnit(&buf, "suite"); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Suites []struct {
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &v); err != nil {
		t.Fatalf("the XML does not parse: %v\n%s", err, buf.String())
	}
	if got := v.Suites[0].Cases[0].Failure.Message; got != "a body with \uFFFD and \"quotes\"" {
		t.Errorf("message = %q", got)
	}
}

// TestWriteJUnitReports: several reports in one document, a testsuite per
// report named after its sides, the root counting them all; one report
// gives the document WriteJUnit gives.
func TestWriteJUnitReports(t *testing.T) {
	outcome := func(ms int) answer.Answer {
		return answer.Answer{Status: 200, Elapsed: time.Duration(ms) * time.Millisecond}
	}
	ab := &compare.Report{A: "legacy", B: "sockets:nethttp", Results: []compare.Result{
		{Name: "a/1", Schema: "a", A: outcome(250), B: outcome(250)},
	}}
	ac := &compare.Report{A: "legacy", B: "sockets:h1", Results: []compare.Result{
		{Name: "a/1", Schema: "a", A: outcome(500), B: outcome(500)},
		{Name: "a/2", Schema: "a", A: outcome(0), B: outcome(0), Differences: []answer.Difference{{Kind: answer.KindStatus, A: "200", B: "502", Explanation: "legacy answered 200; sockets:h1 answered 502"}}},
	}}
	var buf bytes.Buffer
	if err := compare.WriteJUnitReports(&buf, "ci", ab, ac); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Time     string `xml:"time,attr"`
		Suites   []struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
			Time     string `xml:"time,attr"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("the XML does not parse: %v\n%s", err, buf.String())
	}
	type suite struct {
		Name            string
		Tests, Failures int
		Time            string
	}
	var suites []suite
	for _, s := range got.Suites {
		suites = append(suites, suite{s.Name, s.Tests, s.Failures, s.Time})
	}
	want := []suite{{"ci legacy vs sockets:nethttp", 1, 0, "0.500"}, {"ci legacy vs sockets:h1", 2, 1, "1.000"}}
	if diff := cmp.Diff(want, suites); diff != "" || got.Name != "ci" || got.Tests != 3 || got.Failures != 1 || got.Time != "1.500" {
		t.Errorf("root %q: %d tests, %d failures, time %s; suites (-want +got):\n%s\n%s", got.Name, got.Tests, got.Failures, got.Time, diff, buf.String())
	}

	var one, single bytes.Buffer
	if err := compare.WriteJUnitReports(&one, "", ac); err != nil {
		t.Fatal(err)
	}
	if err := ac.WriteJUnit(&single, ""); err != nil {
		t.Fatal(err)
	}
	if one.String() != strings.Replace(single.String(), `<testsuites name="compare legacy vs sockets:h1"`, `<testsuites name=""`, 1) {
		t.Errorf("one report:\n%s\nWriteJUnit:\n%s", one.String(), single.String())
	}
}
