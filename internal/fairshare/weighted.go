package fairshare

import (
	"context"
	"fmt"
	"sync"
)

// Weighted is a weighted semaphore whose waiters take turns by key (the
// webhook's lanes key them by client address): while several keys wait,
// the first waiter of each is let in in turn, round-robin, and a key's own
// waiters go in arrival order. So a key that queues many never holds up
// another's for more than one turn of each key waiting. The waiter whose
// turn it is waits until its weight fits, and no other passes it, so a
// heavy one is never starved by light ones.
//
// It is safe for concurrent use.
type Weighted struct {
	mu    sync.Mutex
	limit int64
	held  int64
	q     queues
}

// NewWeighted is a Weighted of limit.
func NewWeighted(limit int64) *Weighted {
	return &Weighted{limit: limit, q: newQueues()}
}

// Acquire waits for n of the limit for key, and returns nil once it holds
// them, or ctx's error when ctx ends first. It fails at once when n is over
// the limit.
func (s *Weighted) Acquire(ctx context.Context, key string, n int64) error {
	if n > s.limit {
		return fmt.Errorf("a weight of %d is over the limit of %d", n, s.limit)
	}
	w := &waiter{key: key, weight: n, admitted: make(chan struct{})}
	s.mu.Lock()
	s.q.push(w)
	s.dispatch()
	s.mu.Unlock()
	select {
	case <-w.admitted:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		waiting := s.q.remove(w)
		if waiting {
			s.dispatch() // w may have held up those behind it
		}
		s.mu.Unlock()
		if !waiting {
			s.Release(n) // admitted meanwhile: given back at once
		}
		return ctx.Err()
	}
}

// Release gives back n.
func (s *Weighted) Release(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held -= n
	s.dispatch()
}

// dispatch lets in the waiters whose turn it is while their weight fits.
func (s *Weighted) dispatch() {
	for s.q.len() > 0 {
		turn := s.q.byKey[s.q.ring[s.q.next]][0]
		if s.held+turn.weight > s.limit {
			return
		}
		s.q.take(func(string) bool { return true }) // the waiter whose turn it is
		s.held += turn.weight
		close(turn.admitted)
	}
}
