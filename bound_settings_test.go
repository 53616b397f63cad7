//go:build unix

package transport_test

import (
	"time"

	"github.com/fusiongo/transport/env"
)

// boundSettings are the time bounds a call runs under, alone and together,
// none of which passes on the calls measured: TestIdleSettingAllocs holds
// each to the idle targets too. The request bound makes no context, timer
// or goroutine of its own while it does not pass (internal/bound: the
// request context made lazily; the h1 engine keeps the bound on its
// connection's timer).
var boundSettings = []idleSetting{
	{name: "deadline+request_timeout", deadline: true, edit: func(s *env.Settings) { s.RequestTimeout = 20 * time.Second }},
	{name: "header_timeout+request_timeout", edit: func(s *env.Settings) {
		s.HeaderTimeout = 20 * time.Second
		s.RequestTimeout = 20 * time.Second
	}},
	{name: "deadline+header_timeout+request_timeout", deadline: true, edit: func(s *env.Settings) {
		s.HeaderTimeout = 20 * time.Second
		s.RequestTimeout = 20 * time.Second
	}},
	// The production set but dedupe (whose idle cost is its own).
	{name: "production-without-dedupe", deadline: true, edit: func(s *env.Settings) {
		productionSet(s)
		s.Dedupe = env.Disabled
	}},
}
