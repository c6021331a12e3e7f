package fairshare

import (
	"slices"
	"sync"
)

// Parked keeps the work a Gate refuses a place until its namespace has
// room at the gate again, and then hands it back (wake): refused work waits
// without coming back to ask, which a worker polling for a place would
// otherwise do for every item of a busy namespace's backlog. Work parks in
// a class: a lower class is handed back first, and within a class in the
// order it parked. It is safe for concurrent use.
type Parked[K comparable] struct {
	gate    *Gate
	classes int
	wake    func(key K, class int)

	mu sync.Mutex
	// byNS is each namespace's parked keys, by class, in the order parked.
	byNS map[string][][]K
	at   map[K]parkedAt
	// most is the most keys parked at once since the table was made.
	most int
}

type parkedAt struct {
	ns    string
	class int
}

// NewParked parks the work g refuses in classes classes (0 to classes-1),
// and hands each key back with wake, which must not block.
func NewParked[K comparable](g *Gate, classes int, wake func(key K, class int)) *Parked[K] {
	return &Parked[K]{gate: g, classes: max(classes, 1), wake: wake, byNS: map[string][][]K{}, at: map[K]parkedAt{}}
}

// Enter gives key a place for ns (Gate.Enter), or parks it in class until
// ns has room. A place it gives hands parked work back when it is left.
func (p *Parked[K]) Enter(ns string, key K, class int) (*Place, bool) {
	class = min(max(class, 0), p.classes-1)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropLocked(key)
	place, ok := p.gate.Enter(ns)
	if !ok {
		q := p.byNS[ns]
		if q == nil {
			q = make([][]K, p.classes)
			p.byNS[ns] = q
		}
		q[class] = append(q[class], key)
		p.at[key] = parkedAt{ns: ns, class: class}
		p.most = max(p.most, len(p.at))
		return nil, false
	}
	place.onLeave = p.handBack
	return place, true
}

// Forget drops key, parked or not.
func (p *Parked[K]) Forget(key K) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropLocked(key)
}

// Len is the number of keys parked.
func (p *Parked[K]) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.at)
}

func (p *Parked[K]) dropLocked(key K) {
	a, ok := p.at[key]
	if !ok {
		return
	}
	delete(p.at, key)
	q := p.byNS[a.ns]
	q[a.class] = slices.DeleteFunc(q[a.class], func(k K) bool { return k == key })
	p.pruneLocked(a.ns)
	p.shrinkLocked()
}

// shrinkLocked gives back the table of parked keys once none is parked
// after more than shrinkAbove were: a map keeps the room of the most keys
// it ever held, a fan-out's every Persona.
func (p *Parked[K]) shrinkLocked() {
	if len(p.at) == 0 && p.most > shrinkAbove {
		p.at, p.most = map[K]parkedAt{}, 0
	}
}

// shrinkAbove is the most keys parked at once whose table is kept once they
// are all handed back: a few dozen bytes each.
const shrinkAbove = 1024

func (p *Parked[K]) pruneLocked(ns string) {
	for _, c := range p.byNS[ns] {
		if len(c) > 0 {
			return
		}
	}
	delete(p.byNS, ns)
}

// handBack wakes as much parked work as each namespace has room for now. A
// key handed back holds no place until it enters again, so work may be
// handed back beyond the room and park again: once for each place left at
// most, where polling asks for every key again and again.
func (p *Parked[K]) handBack() {
	type woken struct {
		key   K
		class int
	}
	var wake []woken
	p.mu.Lock()
	for ns, q := range p.byNS {
		room := p.gate.room(ns)
		for c := range q {
			n := min(room, len(q[c]))
			for _, k := range q[c][:n] {
				delete(p.at, k)
				wake = append(wake, woken{k, c})
			}
			q[c] = q[c][n:]
			room -= n
		}
		p.pruneLocked(ns)
	}
	p.shrinkLocked()
	p.mu.Unlock()
	for _, w := range wake {
		p.wake(w.key, w.class)
	}
}
