package compare_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fusiongo/transport/answer"
	"github.com/fusiongo/transport/compare"
)

func TestReportWrite(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("case") {
		case "diff":
			bySide(`{"data":{"name":"Ann"}}`, `{"data":{"name":"Anna"}}`)(w, r)
		case "gzip":
			gzipping(`{}`, `{}`)(w, r)
		default:
			io.WriteString(w, `{}`)
		}
	}))
	t.Cleanup(srv.Close)
	urls := map[string]string{"accounts": srv.URL}
	post := func(name, c string) compare.Request {
		return compare.Request{Name: name, Schema: "accounts", Method: "POST", Path: "/?case=" + c, Body: []byte(`{}`)}
	}
	report, err := compare.Run(context.Background(),
		[]compare.Request{post("accounts/users", "same"), post("reviews/entities", "diff"), post("products/top", "gzip")},
		compare.Side{Name: "legacy", Invoker: sideSpec{}.invoker(t, "legacy", urls)},
		compare.Side{Name: "sockets", Invoker: sideSpec{noDecompress: true, header: map[string]string{"Accept-Encoding": "gzip"}}.invoker(t, "sockets", urls)},
		compare.Options{URLs: urls})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := report.Write(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"ok   accounts/users\n",
		"DIFF reviews/entities\n     body data.name: legacy has \"Ann\" at data.name; sockets has \"Anna\"\n       (-legacy +sockets):\n",
		"DIFF products/top\n     header Content-Encoding: legacy decompressed a gzip body transparently; sockets returned it compressed (Content-Encoding: gzip)\n",
		"3 requests: 1 identical, 2 different\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report does not contain %q:\n%s", want, out)
		}
	}
	if !strings.HasSuffix(out, "3 requests: 1 identical, 2 different\n") {
		t.Errorf("report does not end with the summary:\n%s", out)
	}
	if c := report.Counts(); c != (compare.Counts{Requests: 3, Identical: 1, Different: 2}) {
		t.Errorf("Counts() = %+v", c)
	}
}

func TestReportWriteBothFailed(t *testing.T) {
	report := &compare.Report{A: "legacy", B: "sockets", Results: []compare.Result{
		{Name: "a", A: answer.Answer{Err: "x"}, B: answer.Answer{Err: "y"}, Notes: []string{"both sides failed"}},
	}}
	var buf bytes.Buffer
	if err := report.Write(&buf); err != nil {
		t.Fatal(err)
	}
	want := "ok   a\n     note: both sides failed\n1 request: 1 identical, 0 different (1 of the identical failed on both sides)\n"
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("Write mismatch (-want +got):\n%s", diff)
	}
	if !report.Identical() {
		t.Error("Identical() = false, want true: both failing is no difference")
	}
}
