package fairshare

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// A key with two waiters or more goes to the ring's end when its first is
// let in, as keys with one waiter each do when they leave and come back:
// three keys that each keep one request waiting (the webhook lanes' tenant
// pods, each sending its next review as soon as one is answered) leave a
// key with several (the API server, one address, with several reviews in
// flight) its turns. Its second waiter is let in within a few turns (3
// other keys, 2 ms each); when the cursor stayed past a key that still
// waited, it waited out the 500 ms.
func TestAKeyWithSeveralWaitersHasItsTurns(t *testing.T) {
	s := NewWeighted(1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if s.Acquire(ctx, fmt.Sprintf("tenant%d", i), 1) != nil {
					return
				}
				time.Sleep(2 * time.Millisecond)
				s.Release(1)
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	admitted := make(chan time.Duration, 2)
	start := time.Now()
	for i := 0; i < 2; i++ {
		go func() {
			c, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			defer cancel()
			if s.Acquire(c, "apiserver", 1) != nil {
				admitted <- -1
				return
			}
			admitted <- time.Since(start)
			time.Sleep(2 * time.Millisecond)
			s.Release(1)
		}()
		time.Sleep(time.Millisecond)
	}
	for i := 0; i < 2; i++ {
		if d := <-admitted; d < 0 {
			t.Errorf("the API server's waiter %d was never let in within 500 ms, while 3 tenant keys took turns", i+1)
		} else {
			t.Logf("the API server's waiter let in after %v", d.Round(time.Millisecond))
		}
	}
	cancel()
	wg.Wait()
}

// The same turns in the Persona controller's render gate: a namespace with
// two renders waiting for the one slot, while three namespaces each keep
// one render coming, has its second render within a few turns.
func TestAGateNamespaceWithSeveralRendersHasItsTurns(t *testing.T) {
	g := NewGate(1, 16)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				p, ok := g.Enter(fmt.Sprintf("tenant%d", i))
				if !ok {
					time.Sleep(time.Millisecond)
					continue
				}
				release, err := p.Slot(ctx, false)
				if err == nil {
					time.Sleep(2 * time.Millisecond)
					release()
				}
				p.Leave()
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	admitted := make(chan time.Duration, 2)
	start := time.Now()
	for i := 0; i < 2; i++ {
		p, ok := g.Enter("victim")
		if !ok {
			t.Fatal("no place")
		}
		go func() {
			defer p.Leave()
			c, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			defer cancel()
			release, err := p.Slot(c, false)
			if err != nil {
				admitted <- -1
				return
			}
			admitted <- time.Since(start)
			time.Sleep(2 * time.Millisecond)
			release()
		}()
		time.Sleep(time.Millisecond)
	}
	for i := 0; i < 2; i++ {
		if d := <-admitted; d < 0 {
			t.Errorf("a render of the namespace with two waiting never had a slot within 500 ms")
		} else {
			t.Logf("a render of the namespace with two waiting had a slot after %v", d.Round(time.Millisecond))
		}
	}
	cancel()
	wg.Wait()
}
