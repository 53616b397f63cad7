package backend

import (
	"context"
	"sync"
)

// Borrow is carried by the context of a call whose caller holds the
// response only until a callback returns (transport.PostFunc): a
// Pool that can read the response into memory of its own
// (the h1 engine) keeps that memory here, and the request path gives it
// back (Return) once the callback has returned and the body is closed.
// A Pool that cannot lend ignores it. A zero Borrow is ready to use.
type Borrow struct {
	mu   sync.Mutex
	lent Lent // guarded by mu: the memory of the last response read; nil if none
	// spoiled: an attempt of the call went to a transport that may read
	// the request after its RoundTrip returned (net/http's), so the
	// request's memory must not serve another call. Guarded by mu.
	spoiled bool
}

// Spoil records that an attempt of the call went to a transport that may
// still read the request after its RoundTrip has returned.
func (b *Borrow) Spoil() {
	b.mu.Lock()
	b.spoiled = true
	b.mu.Unlock()
}

// Spoiled reports whether Spoil was called.
func (b *Borrow) Spoiled() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spoiled
}

// Lent is memory a Pool lent to one response.
type Lent interface {
	// Return takes the memory back: the response read into it is no
	// longer used by anyone.
	Return()
}

// BorrowKey is the context key under which a call's *Borrow is found.
type BorrowKey struct{}

// BorrowOf returns the Borrow of ctx's call, nil if none.
func BorrowOf(ctx context.Context) *Borrow {
	b, _ := ctx.Value(BorrowKey{}).(*Borrow)
	return b
}

// Keep records l as the memory of the response the Pool returns.
// The memory of an earlier response of the same call (an attempt that a
// retry replaced) is let go to the garbage collector, not returned: what
// the middleware did with that response is not known.
func (b *Borrow) Keep(l Lent) {
	b.mu.Lock()
	b.lent = l
	b.mu.Unlock()
}

// Return gives back the memory kept, if any: the caller has closed the
// response's body and let go of the response.
func (b *Borrow) Return() {
	b.mu.Lock()
	l := b.lent
	b.lent = nil
	b.mu.Unlock()
	if l != nil {
		l.Return()
	}
}

// Forget lets go of the memory kept, if any, without returning it: the
// response may still be in use (the callback panicked).
func (b *Borrow) Forget() {
	b.mu.Lock()
	b.lent = nil
	b.mu.Unlock()
}
