//go:build unix

package faults

import (
	"fmt"
	"net"
	"strconv"
	"syscall"
)

// reservedAddr is a loopback address where nothing listens. On Unix it is a
// socket bound to the port but never listening: a connection attempt gets a
// reset (ECONNREFUSED), and, as the port stays bound, no other socket can
// take it and answer in the meantime.
type reservedAddr struct {
	addr string
	fd   int
}

func reserveAddr() (*reservedAddr, error) {
	// SOCK_CLOEXEC is not on every Unix: hold ForkLock as package net
	// does, so that no child inherits the socket between the two calls.
	syscall.ForkLock.RLock()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("reserving a refused port: %w", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("reserving a refused port: %w", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("reserving a refused port: %w", err)
	}
	port := sa.(*syscall.SockaddrInet4).Port
	return &reservedAddr{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), fd: fd}, nil
}

func (r *reservedAddr) Close() error { return syscall.Close(r.fd) }
