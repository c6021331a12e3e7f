package persona

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// unobservedFirst enqueues at the default priority a Persona of a new
// manager's initial list whose generation its status has not described
// yet: an edit made while no manager ran, or while it started. The For
// watch enqueues the whole initial list at low priority, as unchanged; a
// restart at N Personas would otherwise render the N first, and the edit
// would wait for them.
var unobservedFirst = handler.TypedFuncs[client.Object, reconcile.Request]{
	CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		p, ok := e.Object.(*v1alpha1.Persona)
		if !ok || !e.IsInInitialList || p.Status.ObservedGeneration == p.Generation {
			return
		}
		req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(p)}
		// The queue handed to TypedFuncs adds an initial list's items at low
		// priority unless told otherwise; a priority queue raises an item
		// already queued at low priority.
		if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
			pq.AddWithOpts(priorityqueue.AddOpts{Priority: new(0)}, req)
			return
		}
		q.Add(req)
	},
}
