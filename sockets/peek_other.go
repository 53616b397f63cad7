//go:build !unix

package sockets

// peekFD does nothing where MSG_PEEK is not available: the pool relies on
// the parked reader alone.
func (w *watchedConn) peekFD(uintptr) { w.peekErr = errNoPeek }

func peekSaw(n int, err error) bool { return false }

var errNoPeek = errorString("no peek")

type errorString string

func (e errorString) Error() string { return string(e) }
