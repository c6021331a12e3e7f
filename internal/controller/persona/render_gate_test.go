package persona

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/fairshare"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/status"
)

// contended renders out of wall time whenever another render runs beside
// it, as a render near its limit does on a machine it shares; the first
// render of each bundle waits until every one of them runs, so that they
// meet in the pool.
type contended struct {
	running atomic.Int32
	meet    sync.WaitGroup
	mu      sync.Mutex
	first   map[*render.Bundle]bool
	alone   atomic.Int32
}

func newContended(n int) *contended {
	c := &contended{first: map[*render.Bundle]bool{}}
	c.meet.Add(n)
	return c
}

func (c *contended) render(b *render.Bundle, _ time.Time) (*render.Output, error) {
	c.running.Add(1)
	defer c.running.Add(-1)
	c.mu.Lock()
	first := !c.first[b]
	c.first[b] = true
	c.mu.Unlock()
	if first {
		c.meet.Done()
		c.meet.Wait()
	} else {
		time.Sleep(10 * time.Millisecond)
	}
	if c.running.Load() > 1 {
		return nil, &render.LimitError{Limit: render.LimitTime}
	}
	c.alone.Add(1)
	return &render.Output{Hash: "sha256:ok"}, nil
}

// Two renders that overrun together in the pool are each retried alone,
// and render in time there.
func TestARenderOutOfTimeInThePoolIsRetriedAlone(t *testing.T) {
	r := newReconciler(nil, nil, nil, nil, nil, nil, nil, options{Gate: fairshare.NewGate(2, 16)})
	c := newContended(2)
	r.renderConfigMap = c.render
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, ns := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			place, ok := r.gate.Enter(ns)
			if !ok {
				t.Errorf("no place for %s", ns)
				return
			}
			defer place.Leave()
			_, errs[i] = r.renderTimed(withPlace(context.Background(), place), &render.Bundle{})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("render %d: %v, want it rendered alone", i, err)
		}
	}
	if n := c.alone.Load(); n != 2 {
		t.Errorf("%d renders ran alone, want 2", n)
	}
}

// A render that overruns alone too is out of time: the overruns rule
// counts it.
func TestARenderOutOfTimeAloneIsOutOfTime(t *testing.T) {
	r := newReconciler(nil, nil, nil, nil, nil, nil, nil, options{Gate: fairshare.NewGate(2, 16)})
	calls := 0
	r.renderConfigMap = func(*render.Bundle, time.Time) (*render.Output, error) {
		calls++
		return nil, &render.LimitError{Limit: render.LimitPersonaTime}
	}
	place, _ := r.gate.Enter("a")
	defer place.Leave()
	if _, err := r.renderTimed(withPlace(context.Background(), place), &render.Bundle{}); !status.OutOfTime(err) {
		t.Fatalf("render: %v, want out of time", err)
	}
	if calls != 2 {
		t.Fatalf("rendered %d times, want 2: in the pool, then alone", calls)
	}
}

// The wait is the Persona's: it begins once, whatever guardrails wait,
// at the earliest of what is held and what the status recorded, and begins
// again only after it is forgotten.
func TestGuardrailsWaitBeginsOnce(t *testing.T) {
	g := newGuardrailsWaiting()
	p := objectKey("ns", "p")
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if since := g.begin(p, time.Time{}, start); !since.Equal(start) {
		t.Fatalf("began %v, want now, %v", since, start)
	}
	if since := g.begin(p, time.Time{}, start.Add(time.Minute)); !since.Equal(start) {
		t.Fatalf("a minute later: began %v, want %v", since, start)
	}
	recorded := start.Add(-time.Hour)
	if since := g.begin(p, recorded, start.Add(2*time.Minute)); !since.Equal(recorded) {
		t.Fatalf("with an earlier start recorded: began %v, want %v", since, recorded)
	}
	if since := g.begin(p, start.Add(time.Minute), start.Add(3*time.Minute)); !since.Equal(recorded) {
		t.Fatalf("with a later start recorded: began %v, want the earlier held %v", since, recorded)
	}
	g.forgetPersona(p)
	if since := g.begin(p, time.Time{}, start.Add(4*time.Minute)); !since.Equal(start.Add(4 * time.Minute)) {
		t.Fatalf("after it ended: began %v, want now", since)
	}
}

// A reconcile the gate turns away is parked, not polled: it asks for no
// requeue, and comes back to the controller's queue when a place of its
// namespace is left, an edit at the default priority, a fan-out's status
// pass at low priority.
func TestAReconcileTurnedAwayWaitsParked(t *testing.T) {
	edited := persona("edited", v1alpha1.PersonaSpec{})
	edited.Generation = 2
	fanned := persona("fanned", v1alpha1.PersonaSpec{})
	fanned.Generation, fanned.Status.ObservedGeneration = 1, 1
	s := newSteps(t, edited, fanned)
	s.gate = fairshare.NewGate(1, 1)
	s.parked = fairshare.NewParked(s.gate, parkClasses, s.unpark)
	q := priorityqueue.New[reconcile.Request]("persona-parked-test")
	defer q.ShutDown()
	if err := s.keepQueue(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	s.deferred.put(t.Context(), client.ObjectKeyFromObject(fanned), inputs{1}, status.Render{Hash: "hash"}, v1alpha1.RevisionHistoryEntry{}, nil, "")

	for _, tc := range []struct {
		what         string
		p            *v1alpha1.Persona
		wantPriority int
	}{
		{"an edit", edited, 0},
		{"a fan-out's status pass", fanned, statusPriority},
	} {
		req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(tc.p)}
		hold, ok := s.parked.Enter("ns", types.NamespacedName{Namespace: "ns", Name: "other"}, parkedRender)
		if !ok {
			t.Fatal("no place for the other Persona")
		}
		res, err := s.Reconcile(t.Context(), req)
		if err != nil || res != (reconcile.Result{}) {
			t.Fatalf("%s turned away: %+v, %v; want no requeue and no error", tc.what, res, err)
		}
		if q.Len() != 0 || s.parked.Len() != 1 {
			t.Fatalf("%s turned away: %d queued, %d parked; want it parked", tc.what, q.Len(), s.parked.Len())
		}
		hold.Leave()
		if q.Len() != 1 {
			t.Fatalf("the place was left: %d queued, want %s back", q.Len(), tc.what)
		}
		item, priority, _ := q.GetWithPriority()
		q.Done(item)
		if item != req || priority != tc.wantPriority {
			t.Errorf("%s: queued %v at priority %d, want %v at %d", tc.what, item, priority, req, tc.wantPriority)
		}
	}
}

// sharingCache hands out, to a Get that asks for no copy, the object it
// holds with its maps and lists shared, as the manager's cache does.
type sharingCache struct {
	client.Client
	held *v1alpha1.Persona
}

func (c sharingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	o := client.GetOptions{}
	o.ApplyOptions(opts)
	if p, ok := obj.(*v1alpha1.Persona); ok && key == client.ObjectKeyFromObject(c.held) && o.UnsafeDisableDeepCopy != nil && *o.UnsafeDisableDeepCopy {
		*p = *c.held
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// A reconcile reads the cache's own Persona without a copy, so that one
// parked at the gate costs none; neither one parked nor one that renders,
// delivers and patches the status changes what the cache holds.
func TestReconcileLeavesTheCachedPersonaAlone(t *testing.T) {
	s := newSteps(t, barePersona("p", "Hello", "style"), appendLayer("style", "Be brief."))
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "p"}}
	if _, err := s.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	held := v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}}
	s.get(t, &held)
	if len(held.Status.Conditions) == 0 || len(held.Status.Sections) == 0 || len(held.Status.Dependencies) == 0 {
		t.Fatalf("the first reconcile left a status without conditions, sections or dependencies: %+v", held.Status)
	}
	// An edit the cache holds, which the next reconcile renders and reports.
	held.Spec.SystemPrompt.Extensions[0].Template = "Hello again"
	held.Generation = 2
	if err := s.cluster.Update(t.Context(), held.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	s.get(t, &held)
	want := held.DeepCopy()
	s.cached.Client = sharingCache{Client: s.cached.Client, held: &held}

	s.gate = fairshare.NewGate(1, 1)
	s.parked = fairshare.NewParked(s.gate, parkClasses, s.unpark)
	hold, ok := s.parked.Enter(ns, types.NamespacedName{Namespace: ns, Name: "other"}, parkedRender)
	if !ok {
		t.Fatal("no place for the other Persona")
	}
	if res, err := s.Reconcile(t.Context(), req); err != nil || res != (reconcile.Result{}) || s.parked.Len() != 1 {
		t.Fatalf("turned away: %+v, %v, %d parked; want it parked", res, err, s.parked.Len())
	}
	hold.Leave()
	if _, err := s.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	after := v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}}
	s.get(t, &after)
	if after.Status.ObservedGeneration != 2 {
		t.Fatalf("the reconcile let in did not report generation 2: %+v", after.Status)
	}
	if !equality.Semantic.DeepEqual(&held, want) {
		t.Errorf("the reconciles changed the cache's Persona:\n got %+v\nwant %+v", held.Status, want.Status)
	}
}

// probingWrites is the ConfigMap writes and the status patches of a
// reconcile, each of which first asks whether its namespace has room at the
// gate (free).
type probingWrites struct {
	kube.ConfigMapWrites
	free func(what string)
}

func (w probingWrites) Create(ctx context.Context, cm *corev1.ConfigMap) (string, error) {
	w.free("the ConfigMap's create")
	return w.ConfigMapWrites.Create(ctx, cm)
}

type probingStatus struct {
	client.Client
	free func(what string)
}

func (c probingStatus) Status() client.SubResourceWriter {
	c.free("the status patch")
	return c.Client.Status()
}

// A reconcile holds its place at the gate while it waits to render and
// renders, not while it writes: with one place, another reconcile of the
// namespace finds it free during the first one's ConfigMap create and
// status patch (personas.md#limits: the reconciles waiting to render are
// bounded, the rest of the workers write).
func TestAReconcileWritesWithoutItsPlace(t *testing.T) {
	s := newSteps(t, barePersona("p", "Hello", "style"), appendLayer("style", "Be brief."))
	s.gate = fairshare.NewGate(1, 1)
	s.parked = fairshare.NewParked(s.gate, parkClasses, s.unpark)
	var probed []string
	free := func(what string) {
		place, ok := s.gate.Enter(ns)
		if !ok {
			t.Errorf("%s held the reconcile's place at the gate, want it given back once rendered", what)
			return
		}
		place.Leave()
		probed = append(probed, what)
	}
	s.configMapWriter = probingWrites{ConfigMapWrites: s.configMapWriter, free: free}
	s.cached.Client = probingStatus{Client: s.cached.Client, free: free}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "p"}}
	if _, err := s.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if want := []string{"the ConfigMap's create", "the status patch"}; !slices.Equal(probed, want) {
		t.Errorf("writes probed with a place free: %q, want %q", probed, want)
	}
}
