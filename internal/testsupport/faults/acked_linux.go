package faults

import (
	"net"
	"syscall"
	"time"
	"unsafe"
)

// waitAcked waits, at most limit, until the peer has acknowledged every
// byte written on c: SIOCOUTQ (TIOCOUTQ on a socket) counts the bytes
// still in the send queue, sent or not, that the peer has not acknowledged.
// It polls every millisecond; on loopback the first poll usually finds 0.
func waitAcked(c *net.TCPConn, limit time.Duration) {
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	deadline := time.Now().Add(limit)
	for {
		var queued int32
		var errno syscall.Errno
		if rc.Control(func(fd uintptr) {
			_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCOUTQ, uintptr(unsafe.Pointer(&queued)))
		}) != nil || errno != 0 || queued == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
