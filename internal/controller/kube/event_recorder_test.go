package kube

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// startedRecorder is an EventRecorder writing to a fake API server, with
// a fake clock and no pause between tries, stopped when the test ends.
func startedRecorder(t *testing.T) (*EventRecorder, *fake.Clientset, *clocktesting.FakePassiveClock) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	api := fake.NewClientset()
	r, err := NewEventRecorder(scheme, &events.EventSinkImpl{Interface: api.EventsV1()}, "persona-operator")
	if err != nil {
		t.Fatal(err)
	}
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC))
	r.clock, r.retryAfter = clock, time.Millisecond
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r.Stop(ctx)
	})
	return r, api, clock
}

func eventPersona(name string) *v1alpha1.Persona {
	return &v1alpha1.Persona{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.PersonaKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, UID: k8stypes.UID("uid-" + name), ResourceVersion: "7"},
	}
}

// eventsEventually lists the Events in namespace team until want says they
// are what it waits for.
func eventsEventually(t *testing.T, api *fake.Clientset, want func([]eventsv1.Event) bool) []eventsv1.Event {
	t.Helper()
	var got []eventsv1.Event
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		list, err := api.EventsV1().Events("team").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got = list.Items; want(got) {
			return got
		}
	}
	var names []string
	for _, ev := range got {
		names = append(names, fmt.Sprintf("%s (series %d)", ev.Name, seriesCount(ev)))
	}
	if len(names) > 10 {
		names = append(names[:10], "...")
	}
	t.Fatalf("the %d Events written are not what was waited for: %v", len(got), names)
	return nil
}

func count(n int) func([]eventsv1.Event) bool {
	return func(evs []eventsv1.Event) bool { return len(evs) == n }
}

// seriesCount is ev's series count: 1 for an Event that has no series.
func seriesCount(ev eventsv1.Event) int32 {
	if ev.Series == nil {
		return 1
	}
	return ev.Series.Count
}

func TestEventRecorderWritesAnEventWithWhatItTells(t *testing.T) {
	r, api, _ := startedRecorder(t)
	r.Eventf(eventPersona("a"), nil, corev1.EventTypeNormal, v1alpha1.RenderedReason, "Render", "rendered %d sections", 3)
	ev := eventsEventually(t, api, count(1))[0]
	if ev.Type != corev1.EventTypeNormal || ev.Reason != v1alpha1.RenderedReason || ev.Action != "Render" || ev.Note != "rendered 3 sections" {
		t.Errorf("type, reason, action, note = %q, %q, %q, %q", ev.Type, ev.Reason, ev.Action, ev.Note)
	}
	if ev.Regarding.Kind != v1alpha1.PersonaKind || ev.Regarding.Name != "a" || ev.Regarding.Namespace != "team" || ev.Regarding.UID != "uid-a" {
		t.Errorf("regarding = %+v", ev.Regarding)
	}
	if ev.ReportingController != "persona-operator" || ev.Series != nil {
		t.Errorf("reporting controller %q, series %+v", ev.ReportingController, ev.Series)
	}
}

// warnMissing records the Warning that persona's layer is missing.
func warnMissing(r *EventRecorder, persona, layer string) {
	r.Eventf(eventPersona(persona), nil, corev1.EventTypeWarning, v1alpha1.RenderFailedReason, "Render", "layer %s is missing", layer)
}

// A repeat of an Event within the series window is counted on it; past the
// window it is an Event of its own.
func TestEventRecorderCountsARepeatInTheEventsSeries(t *testing.T) {
	r, api, clock := startedRecorder(t)
	warn := func() { warnMissing(r, "a", "x") }
	warn()
	eventsEventually(t, api, count(1))
	clock.SetTime(clock.Now().Add(time.Minute))
	warn()
	eventsEventually(t, api, func(evs []eventsv1.Event) bool { return len(evs) == 1 && seriesCount(evs[0]) == 2 })
	clock.SetTime(clock.Now().Add(5 * time.Minute)) // 5 minutes after the last repeat, 6 after the Event
	warn()
	ev := eventsEventually(t, api, func(evs []eventsv1.Event) bool { return len(evs) == 1 && seriesCount(evs[0]) == 3 })[0]
	if want := clock.Now(); !ev.Series.LastObservedTime.Time.Equal(want) {
		t.Errorf("series last observed %v, want %v", ev.Series.LastObservedTime, want)
	}
	// Another note, another object: Events of their own.
	warnMissing(r, "a", "y")
	warnMissing(r, "b", "x")
	eventsEventually(t, api, count(3))
	clock.SetTime(clock.Now().Add(eventSeriesWindow + time.Second))
	warn()
	eventsEventually(t, api, count(4))
}

// The recorder keeps eventSeriesEntries Events: a repeat of one it has
// forgotten is an Event of its own.
func TestEventRecorderKeepsABoundedTableOfEvents(t *testing.T) {
	r, api, _ := startedRecorder(t)
	first := func() {
		r.Eventf(eventPersona("p-0"), nil, corev1.EventTypeNormal, v1alpha1.RenderedReason, "Render", "rendered")
	}
	first()
	eventsEventually(t, api, count(1))
	// In batches within the broadcaster's queue.
	for i := 1; i <= eventSeriesEntries; i++ {
		r.Eventf(eventPersona(fmt.Sprintf("p-%d", i)), nil, corev1.EventTypeNormal, v1alpha1.RenderedReason, "Render", "rendered")
		if i%256 == 0 {
			eventsEventually(t, api, count(i+1))
		}
	}
	if n := r.series.Len(); n != eventSeriesEntries {
		t.Errorf("the recorder keeps %d Events, want %d", n, eventSeriesEntries)
	}
	first()
	evs := eventsEventually(t, api, count(eventSeriesEntries+2))
	for _, ev := range evs {
		if ev.Series != nil {
			t.Errorf("Event %s has a series: %+v", ev.Name, ev.Series)
		}
	}
}

// A repeat of an Event the API server no longer has is written anew.
func TestEventRecorderWritesARepeatOfAnEventGoneAnew(t *testing.T) {
	r, api, _ := startedRecorder(t)
	warn := func() { warnMissing(r, "a", "x") }
	warn()
	gone := eventsEventually(t, api, count(1))[0]
	if err := api.EventsV1().Events("team").Delete(context.Background(), gone.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	warn()
	ev := eventsEventually(t, api, count(1))[0]
	if ev.Name == gone.Name || ev.Series != nil {
		t.Errorf("the repeat is %s with series %+v, want a new Event", ev.Name, ev.Series)
	}
}

// An Event the API server could not be reached for, or that it answered
// busy, is written again; one it refuses is not.
func TestEventRecorderRetriesOnlyWhatMaySucceedLater(t *testing.T) {
	for _, c := range []struct {
		name      string
		err       error
		wantTries int32
		wantOne   bool
	}{
		{"connection refused", errors.New("dial tcp 127.0.0.1:6443: connect: connection refused"), 3, true},
		{"too many requests", apierrors.NewTooManyRequests("busy", 1), 3, true},
		{"invalid", apierrors.NewInvalid(eventsv1.SchemeGroupVersion.WithKind("Event").GroupKind(), "e", field.ErrorList{field.Required(field.NewPath("note"), "")}), 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, api, _ := startedRecorder(t)
			var tries atomic.Int32
			api.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
				if tries.Add(1) < 3 {
					return true, nil, c.err
				}
				return false, nil, nil
			})
			r.Eventf(eventPersona("a"), nil, corev1.EventTypeNormal, v1alpha1.RenderedReason, "Render", "rendered")
			if c.wantOne {
				eventsEventually(t, api, count(1))
			} else {
				time.Sleep(100 * time.Millisecond) // ten times the retries' pauses
				eventsEventually(t, api, count(0))
			}
			if got := tries.Load(); got != c.wantTries {
				t.Errorf("%d tries, want %d", got, c.wantTries)
			}
		})
	}
}

// A repeat is counted once however many tries its patch takes, and a create
// the API server made but whose answer was lost is not made twice.
func TestEventRecorderCountsATriedWriteOnce(t *testing.T) {
	r, api, _ := startedRecorder(t)
	var patches, creates atomic.Int32
	api.PrependReactor("patch", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		if patches.Add(1) <= 2 {
			return true, nil, apierrors.NewServiceUnavailable("busy")
		}
		return false, nil, nil
	})
	warnMissing(r, "a", "x")
	eventsEventually(t, api, count(1))
	warnMissing(r, "a", "x")
	eventsEventually(t, api, func(evs []eventsv1.Event) bool { return len(evs) == 1 && seriesCount(evs[0]) == 2 })
	warnMissing(r, "a", "x")
	eventsEventually(t, api, func(evs []eventsv1.Event) bool { return len(evs) == 1 && seriesCount(evs[0]) == 3 })
	if got := patches.Load(); got != 4 {
		t.Errorf("%d patches, want 4 (2 refused, then one per repeat)", got)
	}

	// The API server stores the create and answers 500.
	api.PrependReactor("create", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if creates.Add(1) > 1 {
			return false, nil, nil
		}
		obj := a.(k8stesting.CreateAction).GetObject()
		if err := api.Tracker().Create(a.GetResource(), obj, a.GetNamespace()); err != nil {
			t.Error(err)
		}
		return true, nil, apierrors.NewInternalError(errors.New("etcd leader changed"))
	})
	warnMissing(r, "b", "x")
	evs := eventsEventually(t, api, func(evs []eventsv1.Event) bool { return len(evs) == 2 && creates.Load() == 2 })
	for _, ev := range evs {
		if ev.Regarding.Name == "b" && ev.Series != nil {
			t.Errorf("the Event created once has a series: %+v", ev.Series)
		}
	}
}

// Stop writes every Event recorded before it; one recorded after is
// dropped. A Stop whose context ends gives up the writes in flight.
func TestEventRecorderStopWritesWhatWasRecorded(t *testing.T) {
	r, api, _ := startedRecorder(t)
	for i := range 200 {
		r.Eventf(eventPersona(fmt.Sprintf("p-%d", i)), nil, corev1.EventTypeNormal, v1alpha1.RenderedReason, "Render", "rendered")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Eventf hands each Event to the broadcaster from a goroutine of its
	// own: wait until all are queued, as the controllers' Events are
	// before the manager stops.
	time.Sleep(100 * time.Millisecond)
	r.Stop(ctx)
	list, err := api.EventsV1().Events("team").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 200 {
		t.Errorf("%d Events written by Stop, want 200", len(list.Items))
	}
	r.Eventf(eventPersona("late"), nil, corev1.EventTypeNormal, v1alpha1.RenderedReason, "Render", "rendered")
	time.Sleep(50 * time.Millisecond)
	eventsEventually(t, api, count(200))

	hung, api2, _ := startedRecorder(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	api2.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		<-release // an API server that does not answer
		return true, nil, nil
	})
	hung.Eventf(eventPersona("a"), nil, corev1.EventTypeNormal, v1alpha1.RenderedReason, "Render", "rendered")
	time.Sleep(50 * time.Millisecond)
	short, cancelShort := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancelShort()
	start := time.Now()
	hung.Stop(short)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Stop took %s past its context", took)
	}
}

// The key of an Event is its news: another note, another object, another
// version of the object, another type is another Event.
func TestEventKeyTellsEventsApart(t *testing.T) {
	base := eventsv1.Event{Type: corev1.EventTypeWarning, Action: "Render", Reason: "RenderFailed", ReportingController: "persona-operator",
		Note: "layer x is missing", Regarding: corev1.ObjectReference{Kind: "Persona", Namespace: "team", Name: "a", UID: "u", ResourceVersion: "7"}}
	same := base
	same.Name, same.EventTime = "a.123", metav1.NewMicroTime(time.Now())
	if keyOf(&base) != keyOf(&same) {
		t.Error("an Event and its repeat under another name and time have different keys")
	}
	for name, change := range map[string]func(*eventsv1.Event){
		"note":    func(e *eventsv1.Event) { e.Note = "layer y is missing" },
		"object":  func(e *eventsv1.Event) { e.Regarding.Name = "b" },
		"version": func(e *eventsv1.Event) { e.Regarding.ResourceVersion = "8" },
		"type":    func(e *eventsv1.Event) { e.Type = corev1.EventTypeNormal },
		"related": func(e *eventsv1.Event) { e.Related = &corev1.ObjectReference{Kind: "PromptLayer", Name: "x"} },
	} {
		other := base
		change(&other)
		if keyOf(&other) == keyOf(&base) {
			t.Errorf("another %s, the same key", name)
		}
	}
	// The fields are kept apart, whatever bytes they hold.
	a, b := base, base
	a.Action, a.Reason = "Render\x00Render", "Failed"
	b.Action, b.Reason = "Render", "Render\x00Failed"
	if keyOf(&a) == keyOf(&b) {
		t.Error("text moved from one field to the next, the same key")
	}
}
