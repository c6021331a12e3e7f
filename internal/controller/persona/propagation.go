package persona

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
)

// A change to an object that many Personas read re-renders them all
// without an Event on each: the changed object gets one Normal Propagated
// Event per change, naming how many Personas it re-renders
// (personas.md#events). For a templateFrom ConfigMap, which is not this
// API's, the PromptLayers reading it get the Event.

// An object of a controller's initial list propagates nothing: the
// Persona watch's initial list enqueues every Persona already, and the
// dependents' lookups (a ClusterPromptLayer's lists every Persona) would
// only delay, at a restart at N Personas, the first render.

// PropagatedReason is the reason of the Event on a changed object.
const PropagatedReason = "Propagated"

// propagating enqueues the dependents of a Persona or PromptLayer of kind
// on every event but those of the initial list, and tells the object of its
// creation or change.
func (r *reconciler) propagating(kind string) handler.TypedEventHandler[client.Object, reconcile.Request] {
	enqueue := func(ctx context.Context, obj client.Object, q queue, tell bool) {
		reqs := dependents(ctx, r.Client, r.waiting, objectRef{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()})
		for _, req := range reqs {
			q.Add(req)
		}
		if tell {
			r.propagated(obj, len(reqs))
		}
	}
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[client.Object], q queue) {
			if !e.IsInInitialList {
				enqueue(ctx, e.Object, q, true)
			}
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q queue) {
			enqueue(ctx, e.ObjectNew, q, true)
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q queue) {
			enqueue(ctx, e.Object, q, false)
		},
		GenericFunc: func(ctx context.Context, e event.TypedGenericEvent[client.Object], q queue) {
			enqueue(ctx, e.Object, q, false)
		},
	}
}

// propagated records that obj's change re-renders n Personas; nothing when none.
func (r *reconciler) propagated(obj client.Object, n int) {
	if n == 0 {
		return
	}
	noun := "Personas"
	if n == 1 {
		noun = "Persona"
	}
	r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, PropagatedReason, "Propagate", "the change re-renders %d %s", n, noun)
}

// configMapPropagating enqueues a ConfigMap's dependents (see
// configMapDependents) and tells the PromptLayers reading it through
// templateFrom of its creation or change.
func (r *reconciler) configMapPropagating() handler.TypedEventHandler[*metav1.PartialObjectMetadata, reconcile.Request] {
	enqueue := func(ctx context.Context, obj *metav1.PartialObjectMetadata, q queue, tell bool) {
		reqs := r.configMapDependents(ctx, obj)
		for _, req := range reqs {
			q.Add(req)
		}
		if !tell || len(reqs) == 0 {
			return
		}
		for _, name := range kube.ListNames(ctx, r.Client, &v1alpha1.PromptLayerList{}, obj.Namespace, kube.ReferenceIndex, kube.DependencyKey(v1alpha1.ConfigMapKind, obj.Name)) {
			var l v1alpha1.PromptLayer
			if err := r.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: name}, &l); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "read the PromptLayer to tell of a ConfigMap change", "name", name)
				continue
			}
			r.propagated(&l, len(reqs))
		}
	}
	return handler.TypedFuncs[*metav1.PartialObjectMetadata, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[*metav1.PartialObjectMetadata], q queue) {
			if !e.IsInInitialList {
				enqueue(ctx, e.Object, q, true)
			}
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[*metav1.PartialObjectMetadata], q queue) {
			enqueue(ctx, e.ObjectNew, q, true)
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[*metav1.PartialObjectMetadata], q queue) {
			enqueue(ctx, e.Object, q, false)
		},
		GenericFunc: func(ctx context.Context, e event.TypedGenericEvent[*metav1.PartialObjectMetadata], q queue) {
			enqueue(ctx, e.Object, q, false)
		},
	}
}

// propagating is the event handler of a kind whose change fans out to the
// Personas it selects or feeds (a ClusterPromptLayer, the PromptPlatform):
// enqueue adds the dependents of the object's change from old to cur (each
// nil when there is none) and says how many. A creation, except in the
// initial list, and a change of generation get one Propagated Event with
// that count; a deletion gets none; the initial list, nothing.
func propagating[T client.Object](r *reconciler, enqueue func(ctx context.Context, q queue, old, cur T) int) handler.TypedFuncs[T, reconcile.Request] {
	var none T
	return handler.TypedFuncs[T, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[T], q queue) {
			if !e.IsInInitialList {
				r.propagated(e.Object, enqueue(ctx, q, none, e.Object))
			}
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[T], q queue) {
			if e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() {
				r.propagated(e.ObjectNew, enqueue(ctx, q, e.ObjectOld, e.ObjectNew))
			}
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[T], q queue) {
			enqueue(ctx, q, e.Object, none)
		},
	}
}
