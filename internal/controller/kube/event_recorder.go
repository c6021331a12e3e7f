package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"
	ctrl "sigs.k8s.io/controller-runtime"
)

// EventRecorder records the controllers' Events through the events.k8s.io
// API, run with the manager (Start). client-go's recorder makes each Event
// (its references, name, reporting controller and instance); what happens
// to it then is the recorder's own. client-go's broadcaster would keep a
// copy of every distinct Event for six to twelve minutes, to tell a repeat
// as a series: after 8,000 Personas converge, their 8,000 Rendered Events,
// about 8 MB the manager held through the fan-outs that followed. The
// controllers tell a change once, so a repeat is rare: this recorder keeps
// the key and name of the last eventSeriesEntries Events only, and patches
// a repeat of one of them within eventSeriesWindow into its series as
// client-go does. It writes with eventWriters requests at once; the
// broadcaster's queue (1,000 Events) holds those waiting, and an Event past
// it is dropped, as client-go's broadcaster drops it.
type EventRecorder struct {
	events.EventRecorder
	broadcaster events.EventBroadcaster
	sink        events.EventSink
	clock       clock.PassiveClock
	// retryAfter is the pause before an Event the API server could not be
	// reached for is written again, at most eventWriteTries times.
	retryAfter time.Duration
	// pending hands the Events recorded to the writers; stopped ends the
	// hand-over once they have stopped.
	pending      chan *eventsv1.Event
	stopped      chan struct{}
	stopWatching func()

	mu     sync.Mutex
	series *lru.Cache // eventKey → *eventSeries
}

const (
	// eventSeriesEntries bounds the Events a repeat is recognised of.
	eventSeriesEntries = 1024
	// eventSeriesWindow is how long after an Event's last occurrence a
	// repeat counts in its series (client-go's series end after six
	// minutes without one).
	eventSeriesWindow = 6 * time.Minute
	eventWriters      = 4
	eventWriteTries   = 12
)

var _ events.EventRecorder = &EventRecorder{}

// eventKey identifies the Events that are the same news, as client-go's
// series do: the same type, action, reason, note and reporting controller
// about the same regarding and related objects at the same versions. It is
// a 128-bit hash of them, so that the table holds none of their strings.
type eventKey [16]byte

// eventSeries is what the recorder keeps of an Event written.
type eventSeries struct {
	namespace, name string
	count           int32
	last            time.Time
}

// NewEventRecorder makes the recorder of reportingController's Events,
// which writes them to sink once started. What is recorded before waits
// in the broadcaster's queue.
func NewEventRecorder(scheme *runtime.Scheme, sink events.EventSink, reportingController string) (*EventRecorder, error) {
	b := events.NewBroadcaster(sink)
	r := &EventRecorder{
		EventRecorder: b.NewRecorder(scheme, reportingController),
		broadcaster:   b,
		sink:          sink,
		clock:         clock.RealClock{},
		retryAfter:    10 * time.Second,
		pending:       make(chan *eventsv1.Event),
		stopped:       make(chan struct{}),
		series:        lru.New(eventSeriesEntries),
	}
	stop, err := b.StartEventWatcher(func(obj runtime.Object) {
		if ev, ok := obj.(*eventsv1.Event); ok {
			select {
			case r.pending <- ev:
			case <-r.stopped:
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("watch the Events recorded: %w", err)
	}
	r.stopWatching = stop
	return r, nil
}

// Start writes the Events recorded until ctx ends.
func (r *EventRecorder) Start(ctx context.Context) error {
	var writers sync.WaitGroup
	for range eventWriters {
		writers.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case ev := <-r.pending:
					r.record(ctx, ev)
				}
			}
		})
	}
	<-ctx.Done()
	r.stopWatching()
	r.broadcaster.Shutdown()
	close(r.stopped)
	writers.Wait()
	return nil
}

// NeedLeaderElection is false: the controllers, which record only on the
// leader, find it running.
func (r *EventRecorder) NeedLeaderElection() bool { return false }

// record writes ev, or patches the series of the Event it repeats.
func (r *EventRecorder) record(ctx context.Context, ev *eventsv1.Event) {
	key := keyOf(ev)
	for try := 1; ; try++ {
		err := r.write(ctx, key, ev)
		if err == nil {
			return
		}
		if !retryable(err) || try == eventWriteTries {
			ctrl.LoggerFrom(ctx).Error(err, "write an Event", "namespace", ev.Namespace, "name", ev.Name, "reason", ev.Reason, "tries", try)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait.Jitter(r.retryAfter, 0.25)):
		}
	}
}

func (r *EventRecorder) write(ctx context.Context, key eventKey, ev *eventsv1.Event) error {
	if s, ok := r.repeat(key); ok {
		patch, err := json.Marshal(map[string]eventsv1.EventSeries{"series": {Count: s.count, LastObservedTime: metav1.NewMicroTime(s.last)}})
		if err != nil {
			return err
		}
		_, err = r.sink.Patch(ctx, &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: s.name}}, patch)
		if !apierrors.IsNotFound(err) {
			return err
		}
		// The Event is gone (its time to live is the API server's): the
		// repeat is a new Event.
	}
	r.remember(key, ev)
	_, err := r.sink.Create(ctx, ev)
	return err
}

// repeat counts another occurrence of the Event key names, when one is
// kept that occurred within eventSeriesWindow.
func (r *EventRecorder) repeat(key eventKey) (eventSeries, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.series.Get(key)
	if !ok {
		return eventSeries{}, false
	}
	s := v.(*eventSeries)
	now := r.clock.Now()
	if now.Sub(s.last) > eventSeriesWindow {
		return eventSeries{}, false
	}
	s.count++
	s.last = now
	return *s, true
}

func (r *EventRecorder) remember(key eventKey, ev *eventsv1.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.series.Add(key, &eventSeries{namespace: ev.Namespace, name: ev.Name, count: 1, last: r.clock.Now()})
}

// retryable tells an error reaching the API server, or one it answers a
// busy or failing server with, from an Event it refuses.
func retryable(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return !errors.As(err, new(*restclient.RequestConstructionError))
	}
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err)
}

func keyOf(ev *eventsv1.Event) eventKey {
	h := fnv.New128a()
	field := func(s string) {
		_, _ = io.WriteString(h, s)
		_, _ = h.Write([]byte{0})
	}
	ref := func(o *corev1.ObjectReference) {
		if o == nil {
			field("")
			return
		}
		for _, s := range []string{o.APIVersion, o.Kind, o.Namespace, o.Name, string(o.UID), o.ResourceVersion, o.FieldPath} {
			field(s)
		}
	}
	for _, s := range []string{ev.Type, ev.Action, ev.Reason, ev.ReportingController, ev.Note} {
		field(s)
	}
	ref(&ev.Regarding)
	ref(ev.Related)
	var k eventKey
	copy(k[:], h.Sum(nil))
	return k
}
