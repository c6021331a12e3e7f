package persona

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// Of a new manager's initial list, the Persona edited since its status was
// written is reconciled first; the unchanged ones, which the For watch
// queues at low priority, after it.
func TestUnobservedFirst(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	forWatch := handler.WithLowPriorityWhenUnchanged[client.Object, reconcile.Request](&handler.EnqueueRequestForObject{})
	persona := func(name string, generation, observed int64) *v1alpha1.Persona {
		return &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: generation},
			Status: v1alpha1.PersonaStatus{ObservedGeneration: observed}}
	}
	listed := []*v1alpha1.Persona{persona("a", 1, 1), persona("b", 3, 3), persona("edited", 2, 1), persona("c", 1, 1), persona("new", 1, -1)}
	for _, p := range listed {
		e := event.TypedCreateEvent[client.Object]{Object: p, IsInInitialList: true}
		forWatch.Create(context.Background(), e, q)
		unobservedFirst.Create(context.Background(), e, q)
	}
	// An unchanged Persona that is not of the initial list is the For
	// watch's alone.
	unobservedFirst.Create(context.Background(), event.TypedCreateEvent[client.Object]{Object: persona("later", 2, 1)}, q)

	var first []string
	var priorities []int
	for range 2 {
		req, priority, _ := q.GetWithPriority()
		first, priorities = append(first, req.Name), append(priorities, priority)
		q.Done(req)
	}
	if first[0] != "edited" || first[1] != "new" || priorities[0] != 0 || priorities[1] != 0 {
		t.Errorf("first out of the queue: %v at priorities %v; want edited and new, at 0", first, priorities)
	}
	if got := q.Len(); got != 3 {
		t.Errorf("%d left in the queue, want the 3 unchanged", got)
	}
}

// An object of the initial list propagates nothing: the For watch queues
// every Persona already. A creation after it enqueues its dependents.
func TestInitialListPropagatesNothing(t *testing.T) {
	parent, layer := barePersona("parent", "Parent"), appendLayer("shared", "Shared")
	child := inheriting("child", "Child", []string{"parent"}, "shared")
	s := newSteps(t, parent, layer, child)
	for _, h := range []handler.TypedEventHandler[client.Object, reconcile.Request]{
		s.propagating(v1alpha1.PersonaKind), s.propagating(v1alpha1.PromptLayerKind),
	} {
		for _, obj := range []client.Object{parent, layer} {
			q := priorityqueue.New[reconcile.Request]("test")
			h.Create(context.Background(), event.TypedCreateEvent[client.Object]{Object: obj, IsInInitialList: true}, q)
			if got := q.Len(); got != 0 {
				t.Errorf("the initial list's %s queued %d Personas, want none", obj.GetName(), got)
			}
			q.ShutDown()
		}
	}
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	s.propagating(v1alpha1.PromptLayerKind).Create(context.Background(), event.TypedCreateEvent[client.Object]{Object: layer}, q)
	if got := q.Len(); got != 1 {
		t.Errorf("a PromptLayer created later queued %d Personas, want its 1 dependent", got)
	}
}
