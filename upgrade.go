package transport

import (
	"io"
	"sync"
)

// upgradeSet is the connections an invoker handed over to their callers
// after a protocol upgrade (101 Switching Protocols): no pool counts them
// any more, so the invoker does, and its Close closes them. A reload does
// not: like a request in flight on a drained transport, an upgraded
// connection lives until its caller closes it. The zero value is ready.
type upgradeSet struct {
	mu     sync.Mutex         // guards conns and closed
	conns  map[*upgraded]bool // open, handed over
	closed bool               // Close ran: a new one closes at once
}

// add counts rwc, the body of a 101, and returns it as the caller gets it.
func (s *upgradeSet) add(rwc io.ReadWriteCloser) io.ReadWriteCloser {
	u := &upgraded{ReadWriteCloser: rwc, set: s}
	s.mu.Lock()
	closed := s.closed
	if !closed {
		if s.conns == nil {
			s.conns = map[*upgraded]bool{}
		}
		s.conns[u] = true
	}
	s.mu.Unlock()
	if closed {
		rwc.Close()
	}
	return u
}

// closeAll closes every connection handed over, and any handed over later.
func (s *upgradeSet) closeAll() {
	s.mu.Lock()
	s.closed = true
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	for u := range conns {
		u.ReadWriteCloser.Close()
	}
}

// upgraded is one connection handed over: the path's body, which reads
// and writes the connection, counted until it is closed.
type upgraded struct {
	io.ReadWriteCloser
	set  *upgradeSet // immutable
	once sync.Once
}

func (u *upgraded) Close() error {
	err := u.ReadWriteCloser.Close()
	u.once.Do(func() {
		u.set.mu.Lock()
		delete(u.set.conns, u)
		u.set.mu.Unlock()
	})
	return err
}
