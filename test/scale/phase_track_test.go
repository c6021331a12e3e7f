package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestTrackerCountsAsEventsArrive drives a tracker's watch with random
// creations, updates and deletions and checks, after each, the count it
// keeps against the objects the condition holds for, and that it is done
// exactly when want of them (and, for every, all of them) first hold.
func TestTrackerCountsAsEventsArrive(t *testing.T) {
	for _, every := range []bool{false, true} {
		t.Run(fmt.Sprintf("every=%t", every), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			const want = 20
			tr := newTestTracker(want, every)
			w := watch.NewFake() // unbuffered: each send returns once follow has taken it
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			followed := make(chan bool)
			go func() { followed <- tr.follow(ctx, w) }()
			live := map[string]bool{} // the objects as the events left them
			everReached := false
			for step := range 2000 {
				name := fmt.Sprintf("o%d", rng.IntN(30))
				holds := rng.IntN(3) > 0 || step >= 1500 // at the end every object comes to hold
				obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"ok": map[bool]string{true: "yes"}[holds]}}}
				switch _, exists := live[name]; {
				case exists && rng.IntN(4) == 0:
					w.Delete(obj)
					delete(live, name)
				case exists:
					w.Modify(obj)
					live[name] = holds
				default:
					w.Add(obj)
					live[name] = holds
				}
				w.Action(watch.Bookmark, &metav1.PartialObjectMetadata{}) // the previous event has been applied once this is taken
				n := 0
				for _, holds := range live {
					if holds {
						n++
					}
				}
				tr.mu.Lock()
				got, doneAt := tr.count(), tr.doneAt
				tr.mu.Unlock()
				if got != n {
					t.Fatalf("step %d: the tracker counts %d objects the condition holds for, where %d do", step, got, n)
				}
				reached := n >= want && (!every || n == len(live))
				everReached = everReached || reached
				switch {
				case reached && doneAt.IsZero():
					t.Fatalf("step %d: %d of %d objects hold, want %d, and the tracker is not done", step, n, len(live), want)
				case !everReached && !doneAt.IsZero():
					t.Fatalf("step %d: the tracker is done with %d of %d objects holding, want %d", step, n, len(live), want)
				}
			}
			tr.mu.Lock()
			doneAt := tr.doneAt
			tr.mu.Unlock()
			if doneAt.IsZero() {
				t.Fatal("the condition never held for enough objects: the test proves nothing")
			}
			w.Stop()
			if !<-followed {
				t.Fatal("follow reported the context done when the watch ended")
			}
		})
	}
}

// newTestTracker is a tracker with no watch of its own, done when want
// objects (and, for every, all of them) carry the annotation ok: yes.
func newTestTracker(want int, every bool) *tracker {
	return &tracker{ok: func(obj client.Object) bool { return obj.GetAnnotations()["ok"] == "yes" }, want: want, every: every,
		state: map[string]bool{}, reached: map[string]time.Time{}, done: make(chan struct{})}
}

// BenchmarkTrackerEvent is what applying one watch event costs a tracker
// whose state holds n objects: 8,000, as each of a fan-out's ConfigMap
// watches does at N = 8,000, and 16,000, as each did before it selected its
// half (the live ConfigMaps and a snapshot each); beside it, the count of
// the whole state at every event, which the tracker made before.
func BenchmarkTrackerEvent(b *testing.B) {
	for _, n := range []int{8000, 16000} {
		tr := newTestTracker(n+1, false)
		for i := range n {
			tr.set(fmt.Sprintf("persona-%d", i), i%2 == 0)
		}
		obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "persona-1", Annotations: map[string]string{"ok": "yes"}}}
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			for b.Loop() {
				tr.set(obj.Name, tr.ok(obj))
				tr.check()
			}
		})
		b.Run(fmt.Sprintf("objects=%d/counted-whole", n), func(b *testing.B) {
			for b.Loop() {
				held := 0
				for _, ok := range tr.state {
					if ok {
						held++
					}
				}
				benchHeld = held
			}
		})
	}
}

var benchHeld int
