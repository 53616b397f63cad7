//go:build !unix

package sockets

import "errors"

// peekFD does nothing where MSG_PEEK is not available: the pool relies on
// the parked reader alone.
func (pk *peeker) peekFD(uintptr) { pk.peekErr = errNoPeek }

func peekSaw(n int, err error) bool { return false }

var errNoPeek = errors.New("no MSG_PEEK on this platform")
