//go:build !linux

package redistest

import "os/exec"

// dieWithParent does nothing here: only Linux has a parent-death signal.
// A test binary that dies leaves its redis-server running.
func dieWithParent(*exec.Cmd) {}
