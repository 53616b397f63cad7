package redistest

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill redis-server when the test binary
// dies (a panic, a -timeout): otherwise it would outlive it, holding its
// port.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
