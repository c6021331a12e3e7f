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
// snapshots is deleted by anyone but its own prune: the snapshot of a
// revision it keeps is written again. A snapshot is only created by the
// controller and never changes, so nothing else of the snapshots needs a
// reconcile. The controller starts its workers once the cache of the
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
	return s.snapshots.AddEventHandler(toolscache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		m, ok := obj.(*delivery.SnapshotMeta)
		if !ok || !m.IsSnapshot() || s.pruned(m) {
			return
		}
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: m.Namespace, Name: m.Persona}})
	}})
}

func (s snapshotDeletions) WaitForSync(ctx context.Context) error {
	return s.snapshots.WaitForSync(ctx)
}
