package kube

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"
	ctrl "sigs.k8s.io/controller-runtime"
)

// EventRecorder records the controllers' Events through the events.k8s.io
// API. client-go's recorder makes each Event (its references, name,
// reporting controller and instance); what happens to it then is the
// recorder's own. client-go's broadcaster would keep a copy of every
// distinct Event for six to twelve minutes, to tell a repeat as a series:
// after 8,000 Personas converge, their 8,000 Rendered Events, about 8 MB the
// manager held through the fan-outs that followed. The controllers tell a
// change once, so a repeat is rare: this recorder keeps the key and name of
// the last eventSeriesEntries Events only, and patches a repeat of one of
// them within eventSeriesWindow into its series. It writes with
// eventWriters requests at once; the broadcaster's queue (1,000 Events)
// holds those waiting, and an Event past it is dropped, as client-go's
// broadcaster drops it. It writes from when it is made until Stop.
type EventRecorder struct {
	events.EventRecorder
	broadcaster events.EventBroadcaster
	sink        events.EventSink
	clock       clock.PassiveClock
	// retryAfter is the pause before a write that may succeed later is
	// tried again, eventWriteTries tries in all.
	retryAfter time.Duration
	// cancel ends the writes in flight; written is closed once every
	// Event recorded before Stop has been written or given up.
	cancel  context.CancelFunc
	written chan struct{}

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
	// eventWriteTimeout bounds one request, so that an API server that
	// does not answer holds a writer no longer than that.
	eventWriteTimeout = 15 * time.Second
)

var _ events.EventRecorder = &EventRecorder{}

// eventKey identifies the Events that are the same news: the same type,
// action, reason, note and reporting controller and instance about the same
// regarding and related objects at the same versions (client-go's series
// leave the note out, and count an Event that says something else as a
// repeat). It is the first half of a SHA-256 of them, so that the table
// holds none of their strings and a note cannot be made to collide with
// another Event's.
type eventKey [16]byte

// eventSeries is what the recorder keeps of an Event written.
type eventSeries struct {
	namespace, name string
	count           int32
	last            time.Time
}

// NewEventRecorder makes the recorder of reportingController's Events,
// which writes them to sink until Stop.
func NewEventRecorder(scheme *runtime.Scheme, sink events.EventSink, reportingController string) (*EventRecorder, error) {
	b := events.NewBroadcaster(sink)
	// client-go's broadcaster is a watch.Broadcaster: its watch tells when
	// the broadcaster, shut down, has handed over every Event.
	broadcast, ok := b.(interface {
		Watch() (watch.Interface, error)
	})
	if !ok {
		return nil, fmt.Errorf("client-go's Event broadcaster (%T) cannot be watched", b)
	}
	w, err := broadcast.Watch()
	if err != nil {
		return nil, fmt.Errorf("watch the Events recorded: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &EventRecorder{
		EventRecorder: b.NewRecorder(scheme, reportingController),
		broadcaster:   b,
		sink:          sink,
		clock:         clock.RealClock{},
		retryAfter:    10 * time.Second,
		cancel:        cancel,
		written:       make(chan struct{}),
		series:        lru.New(eventSeriesEntries),
	}
	var writers sync.WaitGroup
	for range eventWriters {
		writers.Go(func() {
			for e := range w.ResultChan() {
				if ev, ok := e.Object.(*eventsv1.Event); ok {
					r.record(ctx, ev)
				}
			}
		})
	}
	go func() {
		writers.Wait()
		cancel()
		close(r.written)
	}()
	return r, nil
}

// Stop takes no more Events and writes those recorded, until ctx ends;
// then it gives up the rest, the requests in flight cancelled. Events
// recorded after Stop are dropped. The manager stops it once its
// controllers have stopped.
func (r *EventRecorder) Stop(ctx context.Context) {
	r.broadcaster.Shutdown() // every Event recorded is handed over, then the watch ends
	select {
	case <-r.written:
	case <-ctx.Done():
		r.cancel()
	}
}

// record writes ev, or patches the series of the Event it repeats. A
// repeat is counted once, however many tries its write takes.
func (r *EventRecorder) record(ctx context.Context, ev *eventsv1.Event) {
	log := ctrl.Log.WithName("events").WithValues("namespace", ev.Namespace, "name", ev.Name, "reason", ev.Reason)
	log.V(1).Info("recording an Event", "type", ev.Type, "regarding", ev.Regarding.Kind+"/"+ev.Regarding.Name, "note", ev.Note)
	key := keyOf(ev)
	series, repeat := r.repeat(key)
	if !repeat {
		r.remember(key, ev)
	}
	created := false // a create was sent: its answer may have been lost
	for try := 1; ; try++ {
		var err error
		if repeat {
			if err = r.patchSeries(ctx, series); apierrors.IsNotFound(err) {
				// The Event is gone (its time to live is the API
				// server's): the repeat is a new Event.
				repeat = false
				r.remember(key, ev)
			}
		}
		if !repeat {
			err = r.create(ctx, ev, created)
			created = true
		}
		if err == nil {
			return
		}
		if !retryable(err) || try == eventWriteTries {
			log.Error(err, "write an Event", "tries", try)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait.Jitter(r.retryAfter, 0.25)):
		}
	}
}

// create creates ev; retried, it takes ev already there as created by the
// try before.
func (r *EventRecorder) create(ctx context.Context, ev *eventsv1.Event, retried bool) error {
	ctx, cancel := context.WithTimeout(ctx, eventWriteTimeout)
	defer cancel()
	_, err := r.sink.Create(ctx, ev)
	if retried && apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func (r *EventRecorder) patchSeries(ctx context.Context, s eventSeries) error {
	patch, err := json.Marshal(map[string]eventsv1.EventSeries{"series": {Count: s.count, LastObservedTime: metav1.NewMicroTime(s.last)}})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, eventWriteTimeout)
	defer cancel()
	_, err = r.sink.Patch(ctx, &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: s.name}}, patch)
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
// busy or failing server with (429, 5xx), from an Event it refuses.
func retryable(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return !errors.As(err, new(*restclient.RequestConstructionError))
	}
	code := status.Status().Code
	return code == http.StatusTooManyRequests || code >= http.StatusInternalServerError
}

func keyOf(ev *eventsv1.Event) eventKey {
	h := sha256.New()
	field := func(s string) {
		// Its length first, so that no two lists of fields hash alike.
		_, _ = h.Write(binary.AppendUvarint(nil, uint64(len(s))))
		_, _ = io.WriteString(h, s)
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
	for _, s := range []string{ev.Type, ev.Action, ev.Reason, ev.ReportingController, ev.ReportingInstance, ev.Note} {
		field(s)
	}
	ref(&ev.Regarding)
	ref(ev.Related)
	var k eventKey
	copy(k[:], h.Sum(nil))
	return k
}
