package respcache

// A stand-in for memory.go (helper cache-stores); removed at its merge.

import (
	"context"
	"slices"
	"sync"
	"time"
)

type stubMemory struct {
	mu      sync.Mutex
	m       map[Key]*Entry
	exp     map[Key]time.Time
	seq     Seq
	all     Seq
	tagSeqs map[string]Seq
}

func NewMemory(maxBytes int) Store {
	return &stubMemory{m: map[Key]*Entry{}, exp: map[Key]time.Time{}, tagSeqs: map[string]Seq{}}
}

func (s *stubMemory) Lookup(ctx context.Context, keys []Key, found []*Entry) (Seq, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, k := range keys {
		found[i] = nil
		if e, ok := s.m[k]; ok && time.Now().Before(s.exp[k]) {
			found[i] = e
		}
	}
	return s.seq, nil
}

func (s *stubMemory) Set(ctx context.Context, k Key, e *Entry, ttl time.Duration, seq Seq) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.all > seq {
		return false, nil
	}
	for _, t := range e.Tags {
		if s.tagSeqs[t] > seq {
			return false, nil
		}
	}
	s.m[k], s.exp[k] = e, time.Now().Add(ttl)
	return true, nil
}

func (s *stubMemory) Invalidate(ctx context.Context, tags []string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	if len(tags) == 0 {
		s.all = s.seq
		n := len(s.m)
		clear(s.m)
		return n, nil
	}
	for _, t := range tags {
		s.tagSeqs[t] = s.seq
	}
	n := 0
	for k, e := range s.m {
		if slices.ContainsFunc(e.Tags, func(t string) bool { return slices.Contains(tags, t) }) {
			delete(s.m, k)
			n++
		}
	}
	return n, nil
}

func (s *stubMemory) Stats() (int64, int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b int64
	for _, e := range s.m {
		b += int64(e.Size())
	}
	return int64(len(s.m)), b, true
}

func (s *stubMemory) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.m)
	return nil
}
