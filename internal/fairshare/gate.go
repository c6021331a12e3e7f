package fairshare

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Gate admits CPU-bound work (the Persona controller's renders) to a fixed
// number of slots, shared between namespaces. A render's limit is wall
// time, and wall time is CPU time only while no more renders run than the
// CPUs can serve: so the slots are the CPUs, and the workers beyond them
// wait at the gate rather than slow every render down.
//
//   - Places: a worker holds a place for its namespace while it renders or
//     waits to (Enter). While several namespaces hold places, each is held
//     to its Share of them, so that one namespace's work waiting at the gate
//     cannot take every worker; the work refused a place waits, parked
//     (Parked), until its namespace has room.
//   - Slots: a place waits for a slot (Place.Slot). While several
//     namespaces wait, one that already runs its Share of the slots is
//     passed over; a slot no namespace under its share can take goes round
//     to the others. Namespaces take turns, round-robin; a namespace's own
//     renders go in arrival order.
//   - Alone: a render that ran out of wall time in the pool is retried
//     alone (Place.Slot with alone set): one at a time, when nothing else
//     runs, so that it has the CPUs to itself as far as the gate can see.
//     While one waits, the pool takes one more round of slots before it
//     drains; after it, the pool has a round again, and the CPUs for at
//     least as long as the render alone took, so that renders retried alone
//     one after another take at most half the time from the pool.
//
// It is safe for concurrent use.
type Gate struct {
	mu     sync.Mutex
	slots  int
	places int

	placesIn  map[string]int
	runningIn map[string]int // pool renders each namespace runs
	busy      int            // slots taken; all of them by a render alone
	alone     bool           // a render runs alone
	// poolCredit is how many more pool renders may start while a render
	// waits to run alone; until poolUntil, any may.
	poolCredit int
	poolUntil  time.Time
	aloneSince time.Time
	now        func() time.Time
	pool       queues
	waitAlone  queues
}

// NewGate is a gate of slots render slots and places places (the workers).
func NewGate(slots, places int) *Gate {
	slots = max(slots, 1)
	return &Gate{slots: slots, places: max(places, 1), placesIn: map[string]int{}, runningIn: map[string]int{},
		poolCredit: slots, pool: newQueues(), waitAlone: newQueues(), now: time.Now}
}

// Place is a worker's place at the gate for one namespace.
type Place struct {
	g    *Gate
	ns   string
	left bool
	// onLeave runs once the place is given back (Parked's).
	onLeave func()
}

// Enter gives a place for namespace ns, or none when ns holds its share of
// the places already (the places divided by the namespaces holding any,
// ns counted, at least 1).
func (g *Gate) Enter(ns string) (*Place, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.roomLocked(ns) == 0 {
		return nil, false
	}
	g.placesIn[ns]++
	return &Place{g: g, ns: ns}, true
}

// room is how many more places Enter would give ns now.
func (g *Gate) room(ns string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.roomLocked(ns)
}

func (g *Gate) roomLocked(ns string) int {
	n := len(g.placesIn)
	if g.placesIn[ns] == 0 {
		n++
	}
	return max(0, Share(g.places, n)-g.placesIn[ns])
}

// Leave gives the place back; a second call does nothing.
func (p *Place) Leave() {
	g := p.g
	g.mu.Lock()
	if p.left {
		g.mu.Unlock()
		return
	}
	p.left = true
	if g.placesIn[p.ns]--; g.placesIn[p.ns] <= 0 {
		delete(g.placesIn, p.ns)
	}
	g.mu.Unlock()
	if p.onLeave != nil {
		p.onLeave()
	}
}

// waiter is one wait in queues, of a key (a namespace, a client address).
type waiter struct {
	key      string
	weight   int64
	admitted chan struct{}
}

// Slot waits for a render slot, in the pool or, with alone, by itself, and
// returns the function that gives it back; or ctx's error when ctx ends
// first.
func (p *Place) Slot(ctx context.Context, alone bool) (release func(), err error) {
	g := p.g
	w := &waiter{key: p.ns, admitted: make(chan struct{})}
	q := &g.pool
	if alone {
		q = &g.waitAlone
	}
	g.mu.Lock()
	q.push(w)
	g.dispatch()
	g.mu.Unlock()
	release = func() { g.release(w, alone) }
	select {
	case <-w.admitted:
		return onlyOnce(release), nil
	case <-ctx.Done():
		g.mu.Lock()
		waiting := q.remove(w)
		if waiting {
			g.dispatch()
		}
		g.mu.Unlock()
		if !waiting {
			release() // admitted meanwhile: given back at once
		}
		return nil, ctx.Err()
	}
}

func onlyOnce(f func()) func() {
	var once sync.Once
	return func() { once.Do(f) }
}

func (g *Gate) release(w *waiter, alone bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if alone {
		now := g.now()
		g.alone, g.busy, g.poolCredit = false, 0, g.slots
		g.poolUntil = now.Add(now.Sub(g.aloneSince))
	} else {
		g.busy--
		if g.runningIn[w.key]--; g.runningIn[w.key] <= 0 {
			delete(g.runningIn, w.key)
		}
	}
	g.dispatch()
}

// dispatch admits what may run now.
func (g *Gate) dispatch() {
	for !g.alone {
		poolTurn := g.poolCredit > 0 || g.now().Before(g.poolUntil)
		if g.waitAlone.len() > 0 && (!poolTurn || g.pool.len() == 0) {
			// The pool drains; then the render waiting alone runs.
			if g.busy == 0 {
				w := g.waitAlone.take(func(string) bool { return true })
				g.alone, g.busy, g.aloneSince = true, g.slots, g.now()
				close(w.admitted)
			}
			return
		}
		if g.busy >= g.slots {
			return
		}
		share := Share(g.slots, len(g.pool.ring))
		w := g.pool.take(func(ns string) bool { return g.runningIn[ns] < share })
		if w == nil {
			w = g.pool.take(func(string) bool { return true })
		}
		if w == nil {
			return
		}
		if g.waitAlone.len() > 0 && g.poolCredit > 0 {
			g.poolCredit--
		}
		g.busy++
		g.runningIn[w.key]++
		close(w.admitted)
	}
}

// queues are each key's waiters in arrival order, and the round-robin
// ring of the keys with any.
type queues struct {
	byKey map[string][]*waiter
	ring  []string
	next  int
	n     int
	// pushed counts the waiters ever pushed.
	pushed int
}

func newQueues() queues { return queues{byKey: map[string][]*waiter{}} }

func (q *queues) len() int { return q.n }

func (q *queues) push(w *waiter) {
	if len(q.byKey[w.key]) == 0 {
		q.ring = append(q.ring, w.key)
	}
	q.byKey[w.key] = append(q.byKey[w.key], w)
	q.n++
	q.pushed++
}

// take removes and returns the first waiter of the first key from the
// cursor that may, and moves the cursor past that key; nil when none may.
func (q *queues) take(may func(ns string) bool) *waiter {
	for i := range len(q.ring) {
		at := (q.next + i) % len(q.ring)
		ns := q.ring[at]
		if !may(ns) {
			continue
		}
		w := q.byKey[ns][0]
		q.drop(w, 0)
		if len(q.ring) > 0 {
			// A key that still waits goes to the ring's end, as one that
			// leaves and comes back does: otherwise the cursor, which
			// stays put as keys with one waiter each leave and come back
			// at the end, never comes round to it again.
			if idx := slices.Index(q.ring, ns); idx >= 0 {
				q.ring = append(slices.Delete(q.ring, idx, idx+1), ns)
				q.next = idx % len(q.ring)
			} else {
				q.next = at % len(q.ring)
			}
		}
		return w
	}
	return nil
}

// remove takes w out of its queue; false when it is in none.
func (q *queues) remove(w *waiter) bool {
	i := slices.Index(q.byKey[w.key], w)
	if i < 0 {
		return false
	}
	q.drop(w, i)
	return true
}

func (q *queues) drop(w *waiter, i int) {
	q.byKey[w.key] = slices.Delete(q.byKey[w.key], i, i+1)
	q.n--
	if len(q.byKey[w.key]) > 0 {
		return
	}
	delete(q.byKey, w.key)
	q.ring, q.next = Leave(q.ring, q.next, w.key)
}
