//go:build !unix

package sockets

import "errors"

// peekFD does nothing where a non-blocking MSG_PEEK is not available:
// peeker.init fails, so the pool relies on net/http's parked reader alone,
// and each h1 connection carries one request (h1Conn.oneShot).
func (pk *peeker) peekFD(uintptr) { pk.peekErr = errNoPeek }

// peekFD is never called here: peeker.init fails, so watchedConn has no
// wait.
func peekFD(uintptr, []byte) (int, error) { return 0, errNoPeek }

func peekSaw(n int, err error) bool { return false }

func peekable(error) bool { return false }

var errNoPeek = errors.New("no non-blocking MSG_PEEK on this platform")
