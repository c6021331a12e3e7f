package persona

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/resolve"
	"github.com/persona-operator/persona-operator/internal/status"
)

// tryRender resolves the persona's references and renders its ConfigMap data.
// A spec problem is an outcome; only a failure to read is an error. The
// status pass of a fan-out that reads what the delivery read reports the
// delivered render instead.
func (r *reconciler) tryRender(ctx context.Context, p *v1alpha1.Persona) (outcome, error) {
	start := time.Now()
	key := client.ObjectKeyFromObject(p)
	deferred, isDeferred := r.deferred.take(key)
	res, in, read, err := r.resolve(ctx, p)
	p.Status.Dependencies = res.Dependencies
	if err != nil {
		if reason, ok := status.ResolveReason(err); ok {
			o := failed(reason, err)
			o.read = read
			return o, nil
		}
		return outcome{}, fmt.Errorf("resolve persona %s: %w", p.Name, err)
	}
	if isDeferred && deferred.inputs == in && r.configMapHolds(ctx, p, deferred.render.Hash) {
		r.overruns.reset(key)
		return outcome{reason: v1alpha1.RenderedReason, render: deferred.render, inputs: in, read: read, delivered: true,
			revision: &deferred.revision, written: deferred.data(ctx), guardrails: deferred.guardrails}, nil
	}
	defer func() { renderDuration.Observe(time.Since(start).Seconds()) }()
	out, err := r.renderTimed(ctx, res.Bundle)
	if gate := (*gateError)(nil); errors.As(err, &gate) {
		return outcome{}, err
	}
	if err != nil && status.OutOfTime(err) {
		o := failed(status.RenderReason(err), err)
		o.read, o.outOfTime = read, true
		o.retryAfter = r.overruns.add(key, p.Generation, res.Bundle)
		return o, nil
	}
	r.overruns.reset(key)
	if err != nil {
		o := failed(status.RenderReason(err), err)
		o.read = read
		return o, nil
	}
	return outcome{reason: v1alpha1.RenderedReason, output: out, render: status.RenderOf(out), inputs: in, read: read,
		guardrails: resolve.GuardrailsIdentity(res.Guardrails)}, nil
}
