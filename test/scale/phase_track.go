package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// tracker watches the objects of one kind in a namespace and reports when
// a condition holds for a number of them. It lists once, then follows a
// watch (re-listing when the watch ends), so it costs the API server one
// event per change instead of a full list per poll: a list of 2000 rendered
// Personas is megabytes, which, polled every 200ms, would take a good part
// of a core on the machine being measured.
type tracker struct {
	c       client.WithWatch
	ns      string
	newList func() client.ObjectList
	// selector, when set, is what the list and the watch select: the API
	// server then neither converts nor sends, nor the harness decodes, the
	// events of the objects the tracker has no use for.
	selector labels.Selector
	ok       func(client.Object) bool
	want     int
	name     string
	// include, when set, leaves out the objects it refuses; every is set
	// when the condition must hold for every object included, as well as
	// for want of them.
	include func(client.Object) bool
	every   bool

	mu    sync.Mutex
	state map[string]bool
	// held counts the objects of state for which the condition holds, kept
	// as each event is applied: counting the map at every event costs the
	// harness time in the size of the namespace per event, on the cores
	// being measured, and delays the moment it reads a phase as done.
	held int
	// reached is when the condition first held for each object, to tell
	// the curve of a phase (when the first, half and most were done).
	reached map[string]time.Time
	doneAt  time.Time
	done    chan struct{}
	cancel  context.CancelFunc
	stopped chan struct{}
}

// track starts a tracker; it returns once the initial list is read and the
// watch is open, so changes made after it returns are seen.
func track(ctx context.Context, c client.WithWatch, ns, name string, newList func() client.ObjectList, selector labels.Selector, want int, ok func(client.Object) bool) (*tracker, error) {
	return startTracker(ctx, &tracker{c: c, ns: ns, newList: newList, selector: selector, ok: ok, want: want, name: name})
}

// trackEvery is track of the objects include accepts, done when ok holds
// for want of them and for no fewer than all: a tracker of objects that
// are created and deleted, such as the snapshots of a revision and those
// it prunes.
func trackEvery(ctx context.Context, c client.WithWatch, ns, name string, newList func() client.ObjectList, selector labels.Selector, want int, include, ok func(client.Object) bool) (*tracker, error) {
	return startTracker(ctx, &tracker{c: c, ns: ns, newList: newList, selector: selector, ok: ok, want: want, name: name, include: include, every: true})
}

func startTracker(ctx context.Context, t *tracker) (*tracker, error) {
	ctx, cancel := context.WithCancel(ctx)
	t.done, t.cancel, t.stopped, t.reached = make(chan struct{}), cancel, make(chan struct{}), map[string]time.Time{}
	w, err := t.listAndWatch(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	go t.run(ctx, w)
	return t, nil
}

func (t *tracker) listAndWatch(ctx context.Context) (watch.Interface, error) {
	list := t.newList()
	if err := t.c.List(ctx, list, t.listOptions()...); err != nil {
		return nil, fmt.Errorf("%s: list: %w", t.name, err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.state, t.held = map[string]bool{}, 0
	for _, o := range items {
		if obj := o.(client.Object); t.included(obj) {
			t.set(obj.GetName(), t.ok(obj))
		}
	}
	t.check()
	t.mu.Unlock()
	rv := list.(metav1.ListInterface).GetResourceVersion()
	w, err := t.c.Watch(ctx, t.newList(), append(t.listOptions(),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})...)
	if err != nil {
		return nil, fmt.Errorf("%s: watch: %w", t.name, err)
	}
	return w, nil
}

// listOptions select the tracker's namespace and, when set, its selector.
func (t *tracker) listOptions() []client.ListOption {
	opts := []client.ListOption{client.InNamespace(t.ns)}
	if t.selector != nil {
		opts = append(opts, client.MatchingLabelsSelector{Selector: t.selector})
	}
	return opts
}

func (t *tracker) run(ctx context.Context, w watch.Interface) {
	defer close(t.stopped)
	for {
		if !t.follow(ctx, w) {
			return
		}
		// The watch ended (a server timeout or an expired resource version): start over.
		var err error
		for {
			if w, err = t.listAndWatch(ctx); err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
				fmt.Fprintf(os.Stderr, "    (%v; retrying)\n", err)
			}
		}
	}
}

// follow applies the watch's events until it ends (true) or ctx is done (false).
func (t *tracker) follow(ctx context.Context, w watch.Interface) bool {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case ev, open := <-w.ResultChan():
			if !open {
				return true
			}
			switch ev.Type {
			case watch.Error:
				return true
			case watch.Bookmark:
				continue
			}
			obj, isObj := ev.Object.(client.Object)
			if !isObj || !t.included(obj) {
				continue
			}
			t.mu.Lock()
			if ev.Type == watch.Deleted {
				t.remove(obj.GetName())
			} else {
				ok := t.ok(obj)
				t.set(obj.GetName(), ok)
				if _, seen := t.reached[obj.GetName()]; ok && !seen {
					t.reached[obj.GetName()] = time.Now()
				}
			}
			t.check()
			t.mu.Unlock()
		}
	}
}

// check records the first moment the condition holds; t.mu is held.
func (t *tracker) check() {
	if !t.doneAt.IsZero() {
		return
	}
	if n := t.count(); n >= t.want && (!t.every || n == len(t.state)) {
		t.doneAt = time.Now()
		close(t.done)
	}
}

func (t *tracker) included(obj client.Object) bool { return t.include == nil || t.include(obj) }

// set records whether the condition holds for name; t.mu is held.
func (t *tracker) set(name string, ok bool) {
	if t.state[name] {
		t.held--
	}
	t.state[name] = ok
	if ok {
		t.held++
	}
}

// remove forgets name; t.mu is held.
func (t *tracker) remove(name string) {
	if was, seen := t.state[name]; seen {
		delete(t.state, name)
		if was {
			t.held--
		}
	}
}

// count is how many objects the condition holds for; t.mu is held.
func (t *tracker) count() int { return t.held }

// pending names up to max objects for which the condition does not hold.
func (t *tracker) pending(max int) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for name, ok := range t.state {
		if !ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	if len(out) > max {
		out = out[:max]
	}
	return out
}

// wait waits until the condition holds for want objects and returns when it
// first did, printing progress every 10s; it fails after timeout.
func (t *tracker) wait(ctx context.Context, start time.Time, timeout time.Duration) (time.Time, error) {
	deadline := time.NewTimer(time.Until(start.Add(timeout)))
	defer deadline.Stop()
	progress := time.NewTicker(10 * time.Second)
	defer progress.Stop()
	for {
		select {
		case <-t.done:
			return t.doneAt, nil
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-progress.C:
			t.mu.Lock()
			n := t.count()
			t.mu.Unlock()
			fmt.Fprintf(os.Stderr, "    %s: %d/%d after %s\n", t.name, n, t.want, time.Since(start).Round(time.Second))
		case <-deadline.C:
			t.mu.Lock()
			n := t.count()
			t.mu.Unlock()
			return time.Time{}, &timeoutError{what: t.name, done: n, want: t.want, after: timeout, pending: t.pending(5)}
		}
	}
}

// stop stops the tracker's watch and waits for its goroutine.
func (t *tracker) stop() {
	t.cancel()
	<-t.stopped
}

type timeoutError struct {
	what       string
	done, want int
	after      time.Duration
	pending    []string
	// detail, when set, says more about why.
	detail string
}

func (e *timeoutError) Error() string {
	msg := fmt.Sprintf("%s: timed out after %s with %d of %d done (still pending: %v)", e.what, e.after, e.done, e.want, e.pending)
	if e.detail != "" {
		msg += "; " + e.detail
	}
	return msg
}

func isTimeout(err error) bool {
	var t *timeoutError
	return errors.As(err, &t)
}

// curve says, counted from start, when the condition first held for the
// first object, for half of want and for nine tenths: whether a phase was
// slow to start or slow throughout.
func (t *tracker) curve(start time.Time) string {
	t.mu.Lock()
	times := make([]time.Time, 0, len(t.reached))
	for _, at := range t.reached {
		times = append(times, at)
	}
	t.mu.Unlock()
	slices.SortFunc(times, time.Time.Compare)
	at := func(k int) string {
		if k < 1 || k > len(times) {
			return "-"
		}
		return times[k-1].Sub(start).Round(time.Millisecond).String()
	}
	return fmt.Sprintf("first %s, half %s, nine tenths %s", at(1), at((t.want+1)/2), at(t.want*9/10))
}
