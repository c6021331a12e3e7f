package persona

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/persona-operator/persona-operator/internal/delivery"
)

// snapshotDeletions is the source that brings a Persona back when one of its
// snapshots is deleted by anyone but its own prune, or edited into no
// snapshot: the snapshot of a revision it keeps is written again. A
// snapshot is only created by the controller and its data never changes,
// so nothing else of the snapshots needs a reconcile. The controller starts its workers once the cache of the
// snapshots has synced.
type snapshotDeletions struct {
	snapshots snapshotEvents
	// pruned reports, once, whether the controller's prune deleted it.
	pruned func(*delivery.SnapshotMeta) bool
}

var _ source.TypedSyncingSource[reconcile.Request] = snapshotDeletions{}

// snapshotEvents are the events of the cache of the snapshots
// (kube.SnapshotCache).
type snapshotEvents interface {
	AddEventHandler(toolscache.ResourceEventHandler) error
	WaitForSync(context.Context) error
}

func (s snapshotDeletions) Start(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	lost := func(m *delivery.SnapshotMeta) {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: m.Namespace, Name: m.Persona}})
	}
	return s.snapshots.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			m, ok := obj.(*delivery.SnapshotMeta)
			if !ok || !m.IsSnapshot() || s.pruned(m) {
				return
			}
			lost(m)
		},
		// A snapshot whose controller reference is edited away, its
		// labels kept, stays in the cache and is a snapshot no more.
		UpdateFunc: func(oldObj, newObj any) {
			was, ok := oldObj.(*delivery.SnapshotMeta)
			is, isMeta := newObj.(*delivery.SnapshotMeta)
			if ok && isMeta && was.IsSnapshot() && !is.IsSnapshot() {
				lost(was)
			}
		},
	})
}

func (s snapshotDeletions) WaitForSync(ctx context.Context) error {
	return s.snapshots.WaitForSync(ctx)
}
