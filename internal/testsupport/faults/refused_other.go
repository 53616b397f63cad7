//go:build !unix

package faults

import "net"

// reservedAddr is a loopback address where nothing listens. Outside Unix it
// is a port that was listened on and closed again: another process could
// take it before a client connects, which is unlikely on loopback.
type reservedAddr struct {
	addr string
}

func reserveAddr() (*reservedAddr, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	return &reservedAddr{addr: addr}, ln.Close()
}

func (r *reservedAddr) Close() error { return nil }
