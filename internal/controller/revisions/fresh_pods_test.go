package revisions

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// heldLists is a reader of pods whose lists each wait for an answer from
// the test: it sees which lists start, and when.
type heldLists struct {
	// pods are every pod's labels, by namespace.
	pods    map[string][]map[string]string
	started chan heldList
}

type heldList struct {
	namespace string
	selector  labels.Selector
	answer    chan error
}

func (h *heldLists) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("only lists")
}

func (h *heldLists) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := (&client.ListOptions{}).ApplyOptions(opts)
	l := heldList{namespace: o.Namespace, selector: o.LabelSelector, answer: make(chan error, 1)}
	h.started <- l
	select {
	case err := <-l.answer:
		if err != nil {
			return err
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	out := list.(*metav1.PartialObjectMetadataList)
	for _, podLabels := range h.pods[o.Namespace] {
		if o.LabelSelector.Matches(labels.Set(podLabels)) {
			out.Items = append(out.Items, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Labels: podLabels}})
		}
	}
	return nil
}

// next is the list started next, failing the test after a while.
func (h *heldLists) next(t *testing.T) heldList {
	t.Helper()
	select {
	case l := <-h.started:
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("no list started")
		return heldList{}
	}
}

// noneStarts fails the test if a list starts within a moment.
func (h *heldLists) noneStarts(t *testing.T) {
	t.Helper()
	select {
	case l := <-h.started:
		t.Fatalf("a list of %s started (%s)", l.namespace, l.selector)
	case <-time.After(50 * time.Millisecond):
	}
}

type inUseAnswer struct {
	inUse map[int64]bool
	err   error
}

// ask asks f in the background for the revisions persona's pods name.
func ask(f *freshPodLists, ctx context.Context, namespace, persona string) chan inUseAnswer {
	out := make(chan inUseAnswer, 1)
	go func() {
		inUse, err := f.revisionsInUse(ctx, namespace, persona)
		out <- inUseAnswer{inUse, err}
	}()
	return out
}

// joined waits until personas have joined namespace's next list.
func joined(t *testing.T, f *freshPodLists, namespace string, personas ...string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		f.mu.Lock()
		var next []string
		if l := f.next[namespace]; l != nil {
			next = slices.Clone(l.personas)
		}
		f.mu.Unlock()
		slices.Sort(next)
		if slices.Equal(next, personas) {
			return
		}
	}
	t.Fatalf("%v never joined the next list of %s", personas, namespace)
}

func answered(t *testing.T, got chan inUseAnswer) inUseAnswer {
	t.Helper()
	select {
	case a := <-got:
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
		return inUseAnswer{}
	}
}

func podOf(persona, revision string) map[string]string {
	return map[string]string{"prompts.persona-operator.dev/persona": persona, "prompts.persona-operator.dev/revision": revision}
}

// A prune asking while its namespace's list is in flight waits for the
// next one, which starts after it asked; the prunes that asked meanwhile
// share that list, which selects their pods alone; another namespace's
// list does not wait.
func TestAFreshPodListStartsAfterItWasAskedFor(t *testing.T) {
	h := &heldLists{started: make(chan heldList), pods: map[string][]map[string]string{
		"team-a": {podOf("a", "1"), podOf("b", "2"), podOf("b", "3"), podOf("c", "4"), podOf("d", "5")},
		"team-b": {podOf("a", "6")},
	}}
	f := newFreshPodLists(h)
	ctx := context.Background()

	gotA := ask(f, ctx, "team-a", "a")
	first := h.next(t)
	if want := "prompts.persona-operator.dev/persona in (a)"; first.namespace != "team-a" || first.selector.String() != want {
		t.Fatalf("first list of %s selects %q, want team-a and %q", first.namespace, first.selector, want)
	}
	// b and c ask while it is in flight: it may not hold a pod admitted
	// just before they asked, so they wait for the next.
	gotB, gotC := ask(f, ctx, "team-a", "b"), ask(f, ctx, "team-a", "c")
	joined(t, f, "team-a", "b", "c")
	h.noneStarts(t)
	gotOther := ask(f, ctx, "team-b", "a")
	other := h.next(t)
	if other.namespace != "team-b" {
		t.Fatalf("a list of %s started, want team-b's", other.namespace)
	}
	other.answer <- nil
	if a := answered(t, gotOther); a.err != nil || !reflect.DeepEqual(a.inUse, map[int64]bool{6: true}) {
		t.Errorf("team-b's a: %v %v, want revision 6", a.inUse, a.err)
	}
	select {
	case a := <-gotB:
		t.Fatalf("b answered from the list in flight when it asked: %v %v", a.inUse, a.err)
	default:
	}

	first.answer <- nil
	if a := answered(t, gotA); a.err != nil || !reflect.DeepEqual(a.inUse, map[int64]bool{1: true}) {
		t.Errorf("a: %v %v, want revision 1", a.inUse, a.err)
	}
	second := h.next(t)
	if want := "prompts.persona-operator.dev/persona in (b,c)"; second.namespace != "team-a" || second.selector.String() != want {
		t.Fatalf("second list of %s selects %q, want team-a and %q", second.namespace, second.selector, want)
	}
	second.answer <- nil
	if a := answered(t, gotB); a.err != nil || !reflect.DeepEqual(a.inUse, map[int64]bool{2: true, 3: true}) {
		t.Errorf("b: %v %v, want revisions 2 and 3", a.inUse, a.err)
	}
	if a := answered(t, gotC); a.err != nil || !reflect.DeepEqual(a.inUse, map[int64]bool{4: true}) {
		t.Errorf("c: %v %v, want revision 4", a.inUse, a.err)
	}
	h.noneStarts(t)
	settled(t, f)
}

// A list that fails fails every prune that joined it, and the next list
// goes on; a prune whose context ends stops waiting.
func TestAFailedFreshPodListFailsItsPrunes(t *testing.T) {
	h := &heldLists{started: make(chan heldList), pods: map[string][]map[string]string{"team-a": {podOf("c", "7")}}}
	f := newFreshPodLists(h)
	ctx := context.Background()

	gotA := ask(f, ctx, "team-a", "a")
	first := h.next(t)
	gotB := ask(f, ctx, "team-a", "b")
	gone, cancel := context.WithCancel(ctx)
	gotGone := ask(f, gone, "team-a", "gone")
	joined(t, f, "team-a", "b", "gone")
	cancel()
	if a := answered(t, gotGone); !errors.Is(a.err, context.Canceled) {
		t.Errorf("a prune whose context ended: %v %v, want context.Canceled", a.inUse, a.err)
	}
	refused := errors.New("refused")
	first.answer <- refused
	if a := answered(t, gotA); !errors.Is(a.err, refused) {
		t.Errorf("a: %v %v, want the list's error", a.inUse, a.err)
	}
	second := h.next(t)
	gotC := ask(f, ctx, "team-a", "c")
	joined(t, f, "team-a", "c")
	second.answer <- refused
	if a := answered(t, gotB); !errors.Is(a.err, refused) {
		t.Errorf("b: %v %v, want the list's error", a.inUse, a.err)
	}
	third := h.next(t)
	third.answer <- nil
	if a := answered(t, gotC); a.err != nil || !reflect.DeepEqual(a.inUse, map[int64]bool{7: true}) {
		t.Errorf("c: %v %v, want revision 7", a.inUse, a.err)
	}
	settled(t, f)
}

// A list runs to its end when the prune that began it stops waiting: it
// serves the others that joined it.
func TestAFreshPodListOutlivesThePruneThatBeganIt(t *testing.T) {
	h := &heldLists{started: make(chan heldList), pods: map[string][]map[string]string{"team-a": {podOf("b", "8")}}}
	f := newFreshPodLists(h)
	ctx := context.Background()

	gotX := ask(f, ctx, "team-a", "x")
	first := h.next(t)
	began, cancel := context.WithCancel(ctx)
	gotA := ask(f, began, "team-a", "a")
	joined(t, f, "team-a", "a")
	gotB := ask(f, ctx, "team-a", "b")
	joined(t, f, "team-a", "a", "b")
	cancel()
	if a := answered(t, gotA); !errors.Is(a.err, context.Canceled) {
		t.Errorf("a, whose context ended: %v %v, want context.Canceled", a.inUse, a.err)
	}
	first.answer <- nil
	if a := answered(t, gotX); a.err != nil {
		t.Errorf("x: %v", a.err)
	}
	second := h.next(t) // begun by a
	second.answer <- nil
	if a := answered(t, gotB); a.err != nil || !reflect.DeepEqual(a.inUse, map[int64]bool{8: true}) {
		t.Errorf("b, sharing the list a began: %v %v, want revision 8", a.inUse, a.err)
	}
	settled(t, f)
}

// A Persona name that is no label value labels no pod: it is left out of
// a list, and fails none of the others'; a list of such names alone is
// not made.
func TestAFreshPodListLeavesOutNamesNoPodCarries(t *testing.T) {
	selector, err := PodsOf([]string{"ab-", "reviewer"})
	if want := "prompts.persona-operator.dev/persona in (reviewer)"; err != nil || selector == nil || selector.String() != want {
		t.Errorf("PodsOf(ab-, reviewer) = %v, %v; want %q", selector, err, want)
	}
	f := newFreshPodLists(&heldLists{started: make(chan heldList)}) // a list would wait forever
	inUse, err := f.revisionsInUse(context.Background(), "team-a", "ab-")
	if err != nil || len(inUse) != 0 {
		t.Errorf("revisions in use of ab-: %v %v, want none and no list", inUse, err)
	}
	settled(t, f)
}

// settled fails the test unless f remembers no namespace.
func settled(t *testing.T, f *freshPodLists) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		f.mu.Lock()
		n, inFlight := len(f.next), slices.Collect(maps.Keys(f.inFlight))
		f.mu.Unlock()
		if n == 0 && len(inFlight) == 0 {
			return
		}
	}
	t.Errorf("lists remembered after all ended")
}
