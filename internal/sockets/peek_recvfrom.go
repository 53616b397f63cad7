//go:build unix && !linux

package sockets

import "syscall"

// peekFD peeks at most len(buf) bytes of the socket fd into buf without
// taking them and without waiting.
func peekFD(fd uintptr, buf []byte) (int, error) {
	n, _, err := syscall.Recvfrom(int(fd), buf, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return n, err
}
