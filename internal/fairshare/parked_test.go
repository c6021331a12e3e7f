package fairshare

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// woke records what a Parked hands back.
type woke struct {
	mu   sync.Mutex
	keys []string
}

func (w *woke) wake(key string, class int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.keys = append(w.keys, fmt.Sprintf("%s/%d", key, class))
}

func (w *woke) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	keys := w.keys
	w.keys = nil
	return keys
}

func enter(t *testing.T, p *Parked[string], ns, key string, class int) *Place {
	t.Helper()
	place, ok := p.Enter(ns, key, class)
	if !ok {
		t.Fatalf("%s of %s: no place", key, ns)
	}
	return place
}

func refused(t *testing.T, p *Parked[string], ns, key string, class int) {
	t.Helper()
	if place, ok := p.Enter(ns, key, class); ok {
		place.Leave()
		t.Fatalf("%s of %s got a place, want it parked", key, ns)
	}
}

// Work turned away waits until a place of its namespace is left, and is
// handed back one for each place: lower classes first, then in the order
// it parked.
func TestParkedHandsBackAsPlacesAreLeft(t *testing.T) {
	var w woke
	p := NewParked(NewGate(1, 2), 3, w.wake)
	a1, a2 := enter(t, p, "a", "a1", 1), enter(t, p, "a", "a2", 1)
	refused(t, p, "a", "late-render", 1)
	refused(t, p, "a", "status", 2)
	refused(t, p, "a", "edit", 0)
	refused(t, p, "a", "late-render", 1) // asked again: parked once, in its place
	if got := w.take(); len(got) != 0 || p.Len() != 3 {
		t.Fatalf("handed back %v with no place left, %d parked; want nothing and 3", got, p.Len())
	}
	a1.Leave()
	if got := w.take(); !slices.Equal(got, []string{"edit/0"}) {
		t.Fatalf("after a place was left: handed back %v, want the edit", got)
	}
	a1.Leave() // a second Leave gives nothing back
	if got := w.take(); len(got) != 0 {
		t.Fatalf("a second Leave handed back %v", got)
	}
	enter(t, p, "a", "edit", 0)
	a2.Leave()
	if got := w.take(); !slices.Equal(got, []string{"late-render/1"}) {
		t.Fatalf("handed back %v, want the render", got)
	}
	if p.Len() != 1 {
		t.Fatalf("%d parked, want the status pass", p.Len())
	}
}

// Room that another namespace leaves goes to a parked namespace below its
// share: its work is handed back without a place of its own left.
func TestParkedHandsBackTheRoomOthersLeave(t *testing.T) {
	var w woke
	p := NewParked(NewGate(1, 4), 2, w.wake)
	for i := range 2 {
		enter(t, p, "a", fmt.Sprint("a", i), 0)
	}
	b1, b2 := enter(t, p, "b", "b1", 0), enter(t, p, "b", "b2", 0)
	refused(t, p, "a", "a2", 0) // a holds its share, 2 of 4
	refused(t, p, "a", "a3", 0)
	b1.Leave()
	if got := w.take(); len(got) != 0 {
		t.Fatalf("b still holds a place: a's share is 2 and it holds 2, but %v was handed back", got)
	}
	b2.Leave()
	if got := w.take(); !slices.Equal(got, []string{"a2/0", "a3/0"}) {
		t.Fatalf("b left: handed back %v, want a's two (its share is 4 now)", got)
	}
}

// A forgotten key is never handed back.
func TestParkedForgets(t *testing.T) {
	var w woke
	p := NewParked(NewGate(1, 1), 1, w.wake)
	a := enter(t, p, "a", "a0", 0)
	refused(t, p, "a", "gone", 0)
	p.Forget("gone")
	a.Leave()
	if got := w.take(); len(got) != 0 || p.Len() != 0 {
		t.Fatalf("handed back %v, %d parked; want nothing", got, p.Len())
	}
}

// Workers that take keys from a queue, and park those turned away, finish
// every key: no key is lost between its refusal and a place left. Each
// refusal is paid for by a place left, where polling would ask again and
// again.
func TestParkedLosesNoWork(t *testing.T) {
	const keys, workers = 3000, 16
	queue := make(chan string, keys)
	p := NewParked(NewGate(2, workers-2), 2, func(key string, _ int) { queue <- key })
	for i := range keys {
		queue <- fmt.Sprintf("%d/k%d", i%3, i)
	}
	var done, refusals, leaves atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case key := <-queue:
					place, ok := p.Enter(key[:1], key, rand.IntN(2)) //nolint:gosec // a test's spread
					if !ok {
						refusals.Add(1)
						continue
					}
					time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond) //nolint:gosec // a test's spread
					place.Leave()
					leaves.Add(1)
					done.Add(1)
				}
			}
		}()
	}
	deadline := time.After(30 * time.Second)
	for done.Load() < keys {
		select {
		case <-deadline:
			close(stop)
			wg.Wait()
			t.Fatalf("%d of %d keys done, %d parked, %d queued: work was lost", done.Load(), keys, p.Len(), len(queue))
		case <-time.After(10 * time.Millisecond):
		}
	}
	close(stop)
	wg.Wait()
	// Each key is turned away at most once before the first places are
	// left, then about once for each place left that hands it back.
	if r, l := refusals.Load(), leaves.Load(); r > keys+2*l {
		t.Errorf("%d refusals for %d keys and %d places left: parked work asks again and again", r, keys, l)
	}
	t.Logf("%d keys, %d refusals", keys, refusals.Load())
}

// The table of parked keys is given back once a fan-out's keys are all
// handed back or forgotten, and kept when only a few were parked.
func TestParkedGivesBackItsTableOnceEmpty(t *testing.T) {
	for _, c := range []struct {
		parked   int
		replaced bool
	}{{shrinkAbove + 1, true}, {3, false}} {
		p := NewParked(NewGate(1, 1), 1, func(string, int) {})
		enter(t, p, "a", "holder", 0)
		for i := range c.parked {
			refused(t, p, "a", fmt.Sprint("k", i), 0)
		}
		table := reflect.ValueOf(p.at).UnsafePointer()
		for i := range c.parked {
			p.Forget(fmt.Sprint("k", i))
		}
		if p.Len() != 0 {
			t.Fatalf("%d parked after all were forgotten", p.Len())
		}
		if replaced := reflect.ValueOf(p.at).UnsafePointer() != table; replaced != c.replaced {
			t.Errorf("after %d keys parked and forgotten, the table was replaced: %v, want %v", c.parked, replaced, c.replaced)
		}
	}
}
