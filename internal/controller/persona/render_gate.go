package persona

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/fairshare"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/status"
)

// The renders of the Persona controller go through a gate
// (fairshare.Gate, personas.md#limits): a render's limit is wall time, so
// no more renders run at once than the CPUs (GOMAXPROCS), shared fairly
// between namespaces, and a namespace's reconciles waiting at the gate hold
// at most its share of the workers beyond them. A render that runs out of
// wall time in the pool is retried at once alone; only an overrun alone
// counts towards the overruns that stall a Persona (overruns.go).

// newRenderGate is the gate of workers Persona workers: the CPUs' slots,
// and places for the workers but one per slot, which stay for the other
// namespaces' reconciles.
func newRenderGate(workers int) *fairshare.Gate {
	slots := runtime.GOMAXPROCS(0)
	return fairshare.NewGate(slots, max(workers, 1)-slots)
}

// The classes of the reconciles parked at the gate, handed back in this
// order: an edit first, then the renders of others' changes, then the
// status passes of a fan-out, which wait behind its deliveries.
const (
	parkedEdit = iota
	parkedRender
	parkedStatusPass
	parkClasses
)

// parkClass is the class p parks in when the gate turns it away.
func (r *reconciler) parkClass(p *v1alpha1.Persona) int {
	switch {
	case p.Status.ObservedGeneration != p.Generation:
		return parkedEdit
	case r.deferred.has(client.ObjectKeyFromObject(p)):
		return parkedStatusPass
	}
	return parkedRender
}

// keepQueue is a source that only keeps the controller's queue, for
// unpark.
func (r *reconciler) keepQueue(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
	if !ok {
		return fmt.Errorf("the Persona controller's queue is a %T, not a priority queue", q)
	}
	r.queue.Store(&pq)
	return nil
}

// unpark queues a parked Persona again, a status pass at its low
// priority.
func (r *reconciler) unpark(key types.NamespacedName, class int) {
	q := r.queue.Load()
	if q == nil {
		return
	}
	priority := 0
	if class == parkedStatusPass {
		priority = statusPriority
	}
	(*q).AddWithOpts(priorityqueue.AddOpts{Priority: &priority}, reconcile.Request{NamespacedName: key})
}

// renderFunc renders a bundle's ConfigMap, its renders ending by deadline
// too when it is not zero (render.Engine.ConfigMapBy).
type renderFunc func(b *render.Bundle, deadline time.Time) (*render.Output, error)

type placeKey struct{}

// withPlace is ctx carrying the reconcile's place at the gate.
func withPlace(ctx context.Context, p *fairshare.Place) context.Context {
	return context.WithValue(ctx, placeKey{}, p)
}

// placeIn is the reconcile's place at the gate that ctx carries, or nil.
func placeIn(ctx context.Context) *fairshare.Place {
	p, _ := ctx.Value(placeKey{}).(*fairshare.Place)
	return p
}

// rendered gives the reconcile's place at the gate back once it renders no
// more: its writes (the ConfigMap's, the snapshot's, the status') hold a
// worker but no place, so that the places bound only a namespace's
// reconciles waiting to render or rendering, and the rest of its workers
// write meanwhile. The rare render after a write (a pinned revision whose
// delivery failed, then the guardrails kept through a failed render) still
// waits for a slot, without a place.
func rendered(ctx context.Context) {
	if p := placeIn(ctx); p != nil {
		p.Leave()
	}
}

// gateError is a render that got no slot: the reconcile ended first.
type gateError struct{ err error }

func (e *gateError) Error() string { return fmt.Sprintf("wait for a render slot: %v", e.err) }
func (e *gateError) Unwrap() error { return e.err }

// renderIn renders b within deadline through the gate, in the pool or
// alone; without a place in ctx (a reconcile outside the manager's) it
// renders at once.
func (r *reconciler) renderIn(ctx context.Context, alone bool, b *render.Bundle, deadline time.Time) (*render.Output, error) {
	if p := placeIn(ctx); p != nil {
		release, err := p.Slot(ctx, alone)
		if err != nil {
			return nil, &gateError{err: err}
		}
		defer release()
	}
	return r.renderConfigMap(b, deadline)
}

// renderTimed renders b in the pool and, when that runs out of wall time,
// again alone: the pool's renders share the CPUs with whatever else runs,
// a render alone does not share them with other renders. The error is out
// of time (status.OutOfTime) only when the render alone was too.
func (r *reconciler) renderTimed(ctx context.Context, b *render.Bundle) (*render.Output, error) {
	out, err := r.renderIn(ctx, false, b, time.Time{})
	if err != nil && status.OutOfTime(err) {
		return r.renderIn(ctx, true, b, time.Time{})
	}
	return out, err
}
