package persona

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"time"

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

// gateRetry is when a reconcile whose namespace holds its share of the
// gate's places comes back, give or take a quarter.
const gateRetry = 500 * time.Millisecond

func gateRetryAfter() time.Duration {
	return gateRetry*3/4 + rand.N(gateRetry/2) //nolint:gosec // jitter, not a secret
}

// renderFunc renders a bundle's ConfigMap, its renders ending by deadline
// too when it is not zero (render.Engine.ConfigMapBy).
type renderFunc func(b *render.Bundle, deadline time.Time) (*render.Output, error)

type placeKey struct{}

// withPlace is ctx carrying the reconcile's place at the gate.
func withPlace(ctx context.Context, p *fairshare.Place) context.Context {
	return context.WithValue(ctx, placeKey{}, p)
}

// gateError is a render that got no slot: the reconcile ended first.
type gateError struct{ err error }

func (e *gateError) Error() string { return fmt.Sprintf("wait for a render slot: %v", e.err) }
func (e *gateError) Unwrap() error { return e.err }

// renderIn renders b within deadline through the gate, in the pool or
// alone; without a place in ctx (a reconcile outside the manager's) it
// renders at once.
func (r *reconciler) renderIn(ctx context.Context, alone bool, b *render.Bundle, deadline time.Time) (*render.Output, error) {
	if p, ok := ctx.Value(placeKey{}).(*fairshare.Place); ok && p != nil {
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
