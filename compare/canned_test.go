package compare_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fusiongo/transport"
	"github.com/fusiongo/transport/answer"
	"github.com/fusiongo/transport/compare"
	"github.com/fusiongo/transport/env"
)

// cannedInvoker answers with responses a test builds, to reach what a real
// server or http.Client would not send: hop-by-hop headers, a redirect
// without a recorded chain.
type cannedInvoker struct {
	respond func(req *http.Request) *http.Response
}

var _ transport.Invoker = (*cannedInvoker)(nil)

func (c *cannedInvoker) Post(ctx context.Context, schema string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+schema+".local/graphql", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	return c.Do(ctx, schema, req)
}

func (c *cannedInvoker) Do(ctx context.Context, schema string, req *http.Request) (*http.Response, error) {
	return c.respond(req), nil
}

func (c *cannedInvoker) Reload(env.Config) error { return nil }
func (c *cannedInvoker) Close() error            { return nil }

func canned(status int, header http.Header, body string, finalURL string) *cannedInvoker {
	return &cannedInvoker{respond: func(req *http.Request) *http.Response {
		if finalURL != "" {
			req = req.Clone(req.Context())
			req.URL, _ = url.Parse(finalURL)
		}
		return &http.Response{
			StatusCode: status, Header: header.Clone(), Request: req,
			Body: io.NopCloser(strings.NewReader(body)),
		}
	}}
}

func TestRunCanned(t *testing.T) {
	tests := []struct {
		name            string
		legacy, sockets *cannedInvoker
		want            []answer.Difference
	}{
		{
			name: "hop-by-hop headers and those Connection names are left out",
			legacy: canned(200, http.Header{
				"Connection": {"keep-alive, X-Trace"}, "Keep-Alive": {"timeout=5"}, "X-Trace": {"abc"},
				"Transfer-Encoding": {"chunked"}, "Te": {"trailers"}, "Upgrade": {"h2c"}, "Trailer": {"X-Sum"},
				"Proxy-Connection": {"keep-alive"}, "Proxy-Authenticate": {"Basic"}, "Proxy-Authorization": {"Basic x"},
				"Content-Type": {"application/json"},
			}, `{}`, ""),
			sockets: canned(200, http.Header{"X-Trace": {"def"}, "Content-Type": {"application/json"}}, `{}`, ""),
		},
		{
			name:    "header names are canonicalised",
			legacy:  canned(200, http.Header{"x-cache": {"hit"}}, `{}`, ""),
			sockets: canned(200, http.Header{"X-Cache": {"hit"}}, `{}`, ""),
		},
		{
			name:    "a redirect seen only in the final URL",
			legacy:  canned(200, http.Header{}, `{}`, "http://accounts.local/v2"),
			sockets: canned(302, http.Header{"Location": {"/v2"}}, ``, ""),
			want: []answer.Difference{{
				Kind: answer.KindRedirect, A: "http://accounts.local/v2", B: "http://accounts.local/graphql",
				Explanation: "legacy followed a 302 to /v2 and got a 200; sockets returned the 302",
			}},
		},
		{
			name:    "a redirect seen only in the final URL, other side not redirected",
			legacy:  canned(200, http.Header{}, `{}`, ""),
			sockets: canned(200, http.Header{}, `{}`, "http://accounts.local/v2?x=1"),
			want: []answer.Difference{{
				Kind: answer.KindRedirect, A: "http://accounts.local/graphql", B: "http://accounts.local/v2?x=1",
				Explanation: "sockets was redirected to /v2?x=1 and got a 200; legacy was not redirected and answered 200",
			}},
		},
		{
			name:    "a gzip body that does not decode is compared as received",
			legacy:  canned(200, http.Header{"Content-Encoding": {"gzip"}}, `not gzip`, ""),
			sockets: canned(200, http.Header{"Content-Encoding": {"gzip"}}, `not gzip`, ""),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			report, err := compare.Run(context.Background(),
				[]compare.Request{{Name: "q", Schema: "accounts", Body: []byte(usersQuery)}},
				compare.Side{Name: "legacy", Invoker: tt.legacy},
				compare.Side{Name: "sockets", Invoker: tt.sockets},
				compare.Options{URLs: map[string]string{"accounts": "http://accounts.local/graphql"}})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, report.Results[0].Differences, diffOpts...); diff != "" {
				t.Errorf("Differences mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunRejects(t *testing.T) {
	inv := canned(200, nil, `{}`, "")
	legacy, sockets := compare.Side{Name: "legacy", Invoker: inv}, compare.Side{Name: "sockets", Invoker: inv}
	post := compare.Request{Name: "q", Schema: "accounts", Body: []byte(`{}`)}
	tests := []struct {
		name    string
		corpus  []compare.Request
		a, b    compare.Side
		urls    map[string]string
		wantErr string
	}{
		{"unnamed side", []compare.Request{post}, compare.Side{Invoker: inv}, sockets, nil, "a side has no name"},
		{"side without invoker", []compare.Request{post}, legacy, compare.Side{Name: "sockets"}, nil, `side "sockets" has no Invoker`},
		{"same names", []compare.Request{post}, legacy, legacy, nil, `both sides are named "legacy"`},
		{"duplicate names", []compare.Request{post, post}, legacy, sockets, nil, `corpus entry 1: duplicate name "q" (first at entry 0)`},
		{"missing body", []compare.Request{{Name: "q", Schema: "s"}}, legacy, sockets, nil, `corpus entry 0 ("q"): missing "body"`},
		{"relative path without URL", []compare.Request{{Name: "q", Schema: "s", Method: "GET", Path: "/x"}}, legacy, sockets, nil,
			`request "q": path "/x" is relative and Options.URLs has no URL for source schema "s"`},
		{"URL not absolute", []compare.Request{post}, legacy, sockets, map[string]string{"accounts": "/graphql"},
			`source schema "accounts": URL "/graphql" is not absolute`},
		{"URL with a password not absolute", []compare.Request{post}, legacy, sockets, map[string]string{"accounts": "svc:s3cr3t-pw@accounts/graphql"},
			`source schema "accounts": URL "xxxxx@accounts/graphql" is not absolute`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			report, err := compare.Run(context.Background(), tt.corpus, tt.a, tt.b, compare.Options{URLs: tt.urls})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Run error = %v, want one containing %q", err, tt.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "s3cr3t-pw") {
				t.Errorf("Run error = %v holds the URL's password", err)
			}
			if report != nil {
				t.Errorf("Run returned a report with its error")
			}
		})
	}
}
