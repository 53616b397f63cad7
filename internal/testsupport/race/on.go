//go:build race

// Package race says whether the test binary runs under the race detector,
// which slows every request several times over: tests whose load has a
// deadline scale it by Enabled.
package race

// Enabled is true when built with -race.
const Enabled = true
