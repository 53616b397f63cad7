//go:build unix

package sockets

import (
	"errors"
	"syscall"
)

// peekFD looks at the socket without taking bytes from it and without
// waiting: MSG_PEEK|MSG_DONTWAIT.
func (pk *peeker) peekFD(fd uintptr) {
	pk.peekN, pk.peekErr = peekFD(fd, pk.buf[:])
}

// peekSaw reports whether a peek found bytes, an end of stream or an
// error: anything but "nothing yet".
func peekSaw(n int, err error) bool {
	if err != nil {
		return !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EWOULDBLOCK)
	}
	return true // n > 0: bytes; n == 0: the server closed its end
}

// peekable reports whether a peek's result leaves a socket that pending
// can look at: anything but "not a socket" (a pipe or a file under the
// connection) or "not supported".
func peekable(err error) bool {
	return !errors.Is(err, syscall.ENOTSOCK) && !errors.Is(err, syscall.EOPNOTSUPP)
}
