package fairshare

import (
	"context"
	"errors"
	"testing"
	"time"
)

// acquireAsync starts an Acquire and returns the channel its result
// arrives on.
func acquireAsync(s *Weighted, ctx context.Context, key string, n int64) <-chan error {
	done := make(chan error, 1)
	go func() { done <- s.Acquire(ctx, key, n) }()
	return done
}

// waitQueued waits until n waiters are queued.
func waitQueued(t *testing.T, s *Weighted, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		queued := s.q.len()
		s.mu.Unlock()
		if queued == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters queued, want %d", queued, n)
		}
	}
}

// admitted reports whether the Acquire behind done has returned nil.
func admitted(t *testing.T, done <-chan error) bool {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		return true
	case <-time.After(20 * time.Millisecond):
		return false
	}
}

// A key that queued ten waiters before another key's one holds it up for
// one turn only: the other key's waiter is let in second, not eleventh.
func TestWeightedKeysTakeTurns(t *testing.T) {
	s := NewWeighted(1)
	ctx := context.Background()
	if err := s.Acquire(ctx, "a", 1); err != nil {
		t.Fatal(err)
	}
	var fromA []<-chan error
	for i := range 10 {
		fromA = append(fromA, acquireAsync(s, ctx, "a", 1))
		waitQueued(t, s, i+1)
	}
	fromB := acquireAsync(s, ctx, "b", 1)
	waitQueued(t, s, 11)

	s.Release(1)
	if !admitted(t, fromA[0]) {
		t.Fatal("a's first waiter, whose turn it was, was not let in")
	}
	s.Release(1)
	if !admitted(t, fromB) {
		t.Fatal("b's waiter was not let in on the second turn; it waits behind all of a's")
	}
	for i, done := range fromA[1:] {
		s.Release(1)
		if !admitted(t, done) {
			t.Fatalf("a's waiter %d was not let in in arrival order", i+2)
		}
	}
}

// The waiter whose turn it is waits until its weight fits, and a lighter
// one of another key does not pass it meanwhile.
func TestWeightedHeavyWaiterKeepsItsTurn(t *testing.T) {
	s := NewWeighted(10)
	ctx := context.Background()
	if err := s.Acquire(ctx, "light", 5); err != nil {
		t.Fatal(err)
	}
	heavy := acquireAsync(s, ctx, "heavy", 10)
	waitQueued(t, s, 1)
	light := acquireAsync(s, ctx, "light", 1)
	waitQueued(t, s, 2)
	if admitted(t, light) {
		t.Fatal("a light waiter passed the heavy one whose turn it was")
	}
	s.Release(5)
	if !admitted(t, heavy) {
		t.Fatal("the heavy waiter was not let in once its weight fit")
	}
	if admitted(t, light) {
		t.Fatal("the light waiter was let in beside the heavy one, over the limit")
	}
	s.Release(10)
	if !admitted(t, light) {
		t.Fatal("the light waiter was not let in after the heavy one")
	}
}

// A waiter whose context ends leaves its queue, and those behind it go on;
// a weight over the limit is refused at once.
func TestWeightedCancelAndOverLimit(t *testing.T) {
	s := NewWeighted(4)
	if err := s.Acquire(context.Background(), "a", 5); err == nil {
		t.Error("a weight over the limit was not refused")
	}
	if err := s.Acquire(context.Background(), "a", 3); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	blocked := acquireAsync(s, ctx, "b", 4)
	waitQueued(t, s, 1)
	behind := acquireAsync(s, context.Background(), "c", 1)
	waitQueued(t, s, 2)
	cancel()
	if err := <-blocked; !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled waiter returned %v, want context.Canceled", err)
	}
	if !admitted(t, behind) {
		t.Fatal("the waiter behind a cancelled one was not let in once it left")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held != 4 {
		t.Errorf("held %d after the cancel, want 4 (3 and 1)", s.held)
	}
}
