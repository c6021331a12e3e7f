package persona

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/persona-operator/persona-operator/internal/delivery"
)

// recordedHandler is a cache of the snapshots that hands its handler to
// the test.
type recordedHandler struct {
	h toolscache.ResourceEventHandler
}

func (r *recordedHandler) AddEventHandler(h toolscache.ResourceEventHandler) error {
	r.h = h
	return nil
}

func (r *recordedHandler) WaitForSync(context.Context) error { return nil }

// A snapshot's deletion brings its Persona back, told directly or as a
// tombstone, unless the controller's prune deleted it, and so does an edit
// that takes its controller reference; the deletion of a ConfigMap that is
// no Persona's snapshot, and any other event, bring nothing.
func TestSnapshotDeletionsEnqueueThePersona(t *testing.T) {
	snapshot := func(name string, n int64, controller string) *delivery.SnapshotMeta {
		return &delivery.SnapshotMeta{Namespace: "team", Name: delivery.SnapshotName(name, n), Persona: name, Revision: n, Controller: types.UID(controller)}
	}
	pruned := snapshot("pruned", 2, "u2")
	events := &recordedHandler{}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	src := snapshotDeletions{snapshots: events, pruned: func(m *delivery.SnapshotMeta) bool { return m == pruned }}
	if err := src.Start(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	events.h.OnAdd(snapshot("added", 1, "u3"), false)
	events.h.OnUpdate(snapshot("updated", 1, "u4"), snapshot("updated", 1, "u4"))
	events.h.OnUpdate(snapshot("disowned", 2, "u6"), snapshot("disowned", 2, ""))
	events.h.OnUpdate(snapshot("forged", 2, ""), snapshot("forged", 2, ""))
	events.h.OnDelete(pruned)
	events.h.OnDelete(snapshot("forged", 1, "")) // labelled, no Persona's
	events.h.OnDelete(snapshot("deleted", 3, "u1"))
	events.h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "team/persona-missed.r1", Obj: snapshot("missed", 1, "u5")})

	want := map[string]bool{"deleted": true, "missed": true, "disowned": true}
	if q.Len() != len(want) {
		t.Fatalf("%d Personas queued, want %d (deleted, missed, disowned)", q.Len(), len(want))
	}
	for range want {
		req, _ := q.Get()
		if req.Namespace != "team" || !want[req.Name] {
			t.Errorf("queued %v, want team/deleted, team/missed and team/disowned", req)
		}
		q.Done(req)
	}
}
