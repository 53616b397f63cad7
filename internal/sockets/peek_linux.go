//go:build linux

package sockets

import (
	"syscall"
	"unsafe"
)

// peekFD peeks at most len(buf) bytes of the socket fd into buf without
// taking them and without waiting. MSG_DONTWAIT makes the call return at
// once whatever the socket holds, so it is made as a raw system call: the
// scheduler is not told of a call that cannot block (no entersyscall and
// exitsyscall around it), which is most of the cost of the stale check
// that every reuse of an idle connection makes.
func peekFD(fd uintptr, buf []byte) (int, error) {
	var p unsafe.Pointer
	if len(buf) > 0 {
		p = unsafe.Pointer(&buf[0])
	}
	n, _, errno := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(p), uintptr(len(buf)), syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
