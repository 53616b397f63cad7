package main

import "testing"

// TestDefaultHTML: only "-html DIR" (or -html=DIR) alone makes the default
// run write pages; any other flags still go to compare.
func TestDefaultHTML(t *testing.T) {
	tests := []struct {
		args    []string
		dir     string
		isHTMLs bool
	}{
		{[]string{"-html", "out"}, "out", true},
		{[]string{"-html=out"}, "out", true},
		{[]string{"--html", "out"}, "out", true},
		{[]string{"-html", "out", "-v"}, "", false},
		{[]string{"-json", "x.json"}, "", false},
		{[]string{"compare", "-html", "x.html"}, "", false},
		{nil, "", false},
	}
	for _, tt := range tests {
		dir, ok := defaultHTML(tt.args)
		if dir != tt.dir || ok != tt.isHTMLs {
			t.Errorf("defaultHTML(%q) = %q, %v; want %q, %v", tt.args, dir, ok, tt.dir, tt.isHTMLs)
		}
	}
}
