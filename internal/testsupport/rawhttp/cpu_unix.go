//go:build unix

package rawhttp

import "syscall"

// CPUTime returns the user and system CPU time of this process, in
// nanoseconds.
func CPUTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
