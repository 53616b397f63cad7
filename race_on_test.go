//go:build race

package transport_test

// raceEnabled: the race detector slows every request several times over;
// tests whose load has a deadline scale it.
const raceEnabled = true
