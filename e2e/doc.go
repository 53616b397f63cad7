// Package e2e runs the graphql-go-tools federation engine with
// github.com/fusiongo/transport as its HTTP client; see README.md.
package e2e
