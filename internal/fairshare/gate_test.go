package fairshare

import (
	"context"
	"sync"
	"testing"
	"time"
)

func TestShare(t *testing.T) {
	for _, tc := range []struct{ limit, n, want int }{
		{5, 0, 5}, {5, 1, 5}, {5, 2, 2}, {5, 6, 1}, {2, 3, 1},
	} {
		if got := Share(tc.limit, tc.n); got != tc.want {
			t.Errorf("Share(%d, %d) = %d, want %d", tc.limit, tc.n, got, tc.want)
		}
	}
}

// pending is a Slot call under way.
type pending struct {
	release chan func()
}

// slot asks for a slot in a goroutine and returns once the request waits
// or holds a slot.
func slot(t *testing.T, g *Gate, ns string, alone bool) *pending {
	t.Helper()
	p, ok := g.Enter(ns)
	if !ok {
		t.Fatalf("no place for %s", ns)
	}
	g.mu.Lock()
	before := g.pool.pushed + g.waitAlone.pushed
	g.mu.Unlock()
	got := &pending{release: make(chan func(), 1)}
	go func() {
		release, err := p.Slot(context.Background(), alone)
		if err != nil {
			t.Errorf("Slot: %v", err)
			return
		}
		got.release <- func() { release(); p.Leave() }
	}()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		g.mu.Lock()
		now := g.pool.pushed + g.waitAlone.pushed
		g.mu.Unlock()
		if now != before {
			return got
		}
	}
	t.Fatalf("the Slot call of %s neither waits nor runs", ns)
	return nil
}

// running reports whether the call holds its slot, and returns its release.
func (p *pending) running(t *testing.T) func() {
	t.Helper()
	select {
	case r := <-p.release:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("no slot")
		return nil
	}
}

func (p *pending) waits(t *testing.T) {
	t.Helper()
	select {
	case r := <-p.release:
		p.release <- r
		t.Fatal("admitted, want it to wait")
	case <-time.After(20 * time.Millisecond):
	}
}

// A namespace that runs every slot, with more of its renders waiting,
// gives the next free slot to another namespace's render, which arrived
// after them: each namespace is held to its share while others wait.
func TestSlotsAreSharedBetweenNamespaces(t *testing.T) {
	g := NewGate(2, 16)
	a1, a2 := slot(t, g, "a", false), slot(t, g, "a", false)
	releaseA1, releaseA2 := a1.running(t), a2.running(t)
	a3, a4 := slot(t, g, "a", false), slot(t, g, "a", false)
	b1 := slot(t, g, "b", false)
	a3.waits(t)
	b1.waits(t)
	releaseA1()
	releaseB1 := b1.running(t)
	a3.waits(t)
	releaseA2()
	releaseA3 := a3.running(t) // a is under its share (1 of 2) again
	a4.waits(t)
	releaseB1()
	releaseA4 := a4.running(t) // no one else waits: a takes every slot
	releaseA3()
	releaseA4()
}

// One namespace's renders waiting at the gate hold no more than its share
// of the places, so that workers stay for the others.
func TestPlacesAreSharedBetweenNamespaces(t *testing.T) {
	g := NewGate(2, 4)
	var held []*Place
	for range 4 {
		p, ok := g.Enter("a")
		if !ok {
			t.Fatalf("a got %d places, want 4 while alone", len(held))
		}
		held = append(held, p)
	}
	if _, ok := g.Enter("a"); ok {
		t.Fatal("a got a fifth place of 4")
	}
	b, ok := g.Enter("b")
	if !ok {
		t.Fatal("b got no place while a holds every one")
	}
	// Now two namespaces hold places: a's share is 2 of 4.
	held[0].Leave()
	held[0].Leave() // a second Leave gives nothing back
	if _, ok := g.Enter("a"); ok {
		t.Fatal("a got a place over its share of 2 while b holds one")
	}
	b.Leave()
	if _, ok := g.Enter("a"); !ok {
		t.Fatal("a got no place after b left")
	}
}

// A render retried alone runs with nothing else: the pool drains first,
// and takes no slot while it runs. The pool takes at most one round of
// slots while it waits, and has a round again after it.
func TestARenderRetriedAloneRunsByItself(t *testing.T) {
	g := NewGate(2, 16)
	releaseA1 := slot(t, g, "a", false).running(t)
	alone := slot(t, g, "b", true)
	alone.waits(t) // a1 still runs
	// One round of the pool (2 slots) goes before it.
	releaseA2 := slot(t, g, "a", false).running(t)
	a3, a4 := slot(t, g, "a", false), slot(t, g, "a", false)
	a3.waits(t) // both slots run
	releaseA1()
	releaseA3 := a3.running(t)
	a4.waits(t) // the pool's round is over: it drains
	releaseA2()
	alone.waits(t)
	releaseA3()
	releaseAlone := alone.running(t)
	a4.waits(t) // nothing runs beside it
	secondAlone := slot(t, g, "c", true)
	releaseAlone()
	releaseA4 := a4.running(t) // the pool's round comes first
	secondAlone.waits(t)
	releaseA4()
	secondAlone.running(t)()
}

func TestSlotEndsWithTheContext(t *testing.T) {
	g := NewGate(1, 16)
	release := slot(t, g, "a", false).running(t)
	p, _ := g.Enter("b")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := p.Slot(ctx, false); err == nil {
		t.Fatal("Slot returned no error when its context ended")
	}
	release()
	// The slot is free again: the cancelled waiter holds none.
	slot(t, g, "c", false).running(t)()
}

// After a render alone, the pool has the CPUs for at least as long as it
// took, beyond its round, while its renders wait.
func TestThePoolHasAsLongAsTheRenderAlone(t *testing.T) {
	g := NewGate(1, 16)
	var mu sync.Mutex
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }

	releaseAlone := slot(t, g, "a", true).running(t)
	advance(time.Second)
	a1 := slot(t, g, "b", false)
	a1.waits(t)
	second := slot(t, g, "a", true)
	releaseAlone() // took 1 s: the pool has until 1 s from now
	releaseB1 := a1.running(t)
	b2 := slot(t, g, "b", false)
	releaseB1() // the pool's round (1 slot) is over, its second is not
	releaseB2 := b2.running(t)
	b3 := slot(t, g, "b", false)
	advance(time.Second) // the pool's time is over too
	releaseB2()
	releaseSecond := second.running(t)
	b3.waits(t)
	releaseSecond()
	b3.running(t)()
}
