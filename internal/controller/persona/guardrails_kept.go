package persona

import (
	"cmp"
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/resolve"
	"github.com/persona-operator/persona-operator/internal/status"
)

// A failed render keeps the last good prompt, but not at the expense of the
// guardrails (clusterpromptlayers.md#kept-through-failures): when the
// ClusterPromptLayers selecting the Persona are no longer those the
// ConfigMap was rendered with, the last good inputs, its bundle.json, are
// rendered with the current ones and delivered; when that fails too, the
// ClusterPromptLayers alone. So a tenant cannot keep a new guardrail out by
// breaking its Persona first.

// keepGuardrails is the outcome of the failed render failure: the same
// failure, after delivering the current guardrails when the ConfigMap does
// not hold them. Only a failure to read or write is an error.
func (r *reconciler) keepGuardrails(ctx context.Context, p *v1alpha1.Persona, failure outcome) (outcome, error) {
	key := client.ObjectKey{Namespace: p.Namespace, Name: delivery.ConfigMapName(p.Name)}
	current, currentHash, err := r.currentConfigMap(ctx, key)
	switch {
	case apierrors.IsNotFound(err):
		return failure, nil // nothing was delivered, nothing is kept
	case err != nil:
		return outcome{}, fmt.Errorf("get ConfigMap %s: %w", key.Name, err)
	}
	// An orphan of the operator's (kubectl delete persona --cascade=orphan)
	// may be deleted by whoever may delete ConfigMaps, and one written before
	// the ConfigMap policy kept the persona- names for the operator may be
	// anyone's: its bundle.json is not the last good inputs. When guardrails
	// select the Persona it is adopted with the guardrails alone.
	// The caches keep a foreign ConfigMap's metadata trimmed: whether it is
	// an orphan is read from the API server.
	orphan := false
	if !delivery.Controls(p, current) {
		cm, _, err := r.readConfigMap(ctx, key)
		if err != nil {
			return outcome{}, fmt.Errorf("get ConfigMap %s: %w", key.Name, client.IgnoreNotFound(err))
		}
		orphan = isOperatorsOrphan(cm)
	}
	if !orphan && (!delivery.Controls(p, current) || currentHash == "") {
		return failure, nil // not this Persona's data to keep
	}
	guardrails, err := resolve.Guardrails(ctx, kube.Lookup{Cached: r.Client, Sources: r.configMaps}, p)
	if err != nil {
		return outcome{}, fmt.Errorf("resolve the guardrails of persona %s: %w", p.Name, err)
	}
	identity := resolve.GuardrailsIdentity(guardrails)
	fallback := current.Annotations[delivery.FallbackAnnotation]
	if orphan && identity == "" {
		return failure, nil // no guardrails to keep: the orphan waits for a good render
	}
	if !orphan && current.Annotations[delivery.GuardrailsAnnotation] == identity {
		r.guardrailsHeld(p)
		return fallbackOutcome(failure, fallback), nil
	}
	if !orphan && failure.outOfTime && failure.retryAfter > 0 {
		// Time alone costs no text: the render is retried, the new
		// guardrails wait for it, until the deadline.
		if left := r.guardrailsWait(p, time.Now()); left > 0 {
			failure.retryAfter = min(failure.retryAfter, left)
			return failure, nil
		}
	}
	layers := resolve.Layers(guardrails)
	// The last good inputs; none when they do not read, or are an orphan's.
	var lastGood *render.Bundle
	if !orphan {
		data, err := r.configMapData(ctx, current)
		if err != nil {
			return outcome{}, fmt.Errorf("read ConfigMap %s: %w", key.Name, err)
		}
		if b, err := render.UnmarshalBundle([]byte(data[render.BundleKey])); err == nil {
			lastGood = b
		}
	}
	var out *render.Output
	if lastGood != nil && fallback != delivery.FallbackGuardrailsOnly {
		withCurrent := *lastGood
		withCurrent.ClusterLayers = layers
		if out, err = r.renderIn(ctx, false, &withCurrent, time.Time{}); err == nil {
			if out.Hash != currentHash {
				fallback = delivery.FallbackLastGoodInputs
			} // else the same guardrails under new UIDs: the delivery stands as it was
		}
	}
	if out == nil {
		alone := guardrailsAlone(p, lastGood, layers)
		if out, err = r.renderIn(ctx, false, alone, time.Time{}); err != nil && len(alone.Variants) > 0 {
			// The guardrails once per variant may be too large where once
			// fits: the system prompt alone then, rather than the old text.
			alone.Variants = nil
			out, err = r.renderIn(ctx, false, alone, time.Time{})
		}
		if err != nil {
			// Not even the guardrails render: the ConfigMap stays as it is.
			return failure, nil
		}
		fallback = delivery.FallbackGuardrailsOnly
	}
	deliver := failure
	deliver.output, deliver.render, deliver.guardrails, deliver.fallback = out, status.RenderOf(out), identity, fallback
	delivered, err := r.deliver(ctx, p, deliver, false)
	if err != nil || delivered.reason == v1alpha1.ConfigMapConflictReason {
		return delivered, err
	}
	r.guardrailsHeld(p)
	return fallbackOutcome(delivered, fallback), nil
}

// guardrailsWait is how long the ClusterPromptLayers that select p, which
// its ConfigMap does not hold, may still wait at now for a render in time:
// deadline after they began to wait, as held in memory or, after a restart,
// as p's GuardrailsWaiting condition recorded it; 0 once it has passed. It
// sets the condition.
func (r *reconciler) guardrailsWait(p *v1alpha1.Persona, now time.Time) time.Duration {
	var recorded time.Time
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.GuardrailsWaitingCondition); c != nil && c.Status == metav1.ConditionTrue {
		recorded = c.LastTransitionTime.Time
	}
	since := r.guardrailsWaiting.begin(client.ObjectKeyFromObject(p), recorded, now)
	until := since.Add(r.guardrailDeadline())
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: v1alpha1.GuardrailsWaitingCondition, Status: metav1.ConditionTrue,
		Reason: v1alpha1.AwaitingRenderReason, ObservedGeneration: p.Generation,
		Message: fmt.Sprintf("the ConfigMap does not hold the ClusterPromptLayers that select the Persona: they wait for a render in time until %s (--guardrail-deadline %s), then are delivered with the last good inputs, or alone",
			until.UTC().Format(time.RFC3339), r.guardrailDeadline())})
	meta.FindStatusCondition(p.Status.Conditions, v1alpha1.GuardrailsWaitingCondition).LastTransitionTime = metav1.NewTime(since)
	return max(0, until.Sub(now))
}

// guardrailsHeld ends p's wait: its ConfigMap holds the ClusterPromptLayers
// that select it.
func (r *reconciler) guardrailsHeld(p *v1alpha1.Persona) {
	r.guardrailsWaiting.forgetPersona(client.ObjectKeyFromObject(p))
	meta.RemoveStatusCondition(&p.Status.Conditions, v1alpha1.GuardrailsWaitingCondition)
}

// guardrailsAlone is the bundle of the guardrails alone
// (clusterpromptlayers.md#kept-through-failures): they render with
// personas.md's zero values but .Harness, .Workspace and .Slug (the
// Persona's namespace and name), persona.md is empty, and bundle.json holds
// nothing of the tenant's but its variants' names and harnesses, so that
// it fits whatever the tenant wrote, when the guardrails alone fit. The
// harness is the last good bundle's (resolved through the chain), else the
// spec's. Each variant gets its key, the guardrails rendered for its
// harness, so that a pod that names it finds its file. lastGood is nil
// when the live bundle.json did not read.
func guardrailsAlone(p *v1alpha1.Persona, lastGood *render.Bundle, layers []render.ClusterLayer) *render.Bundle {
	b := &render.Bundle{Persona: render.PersonaFields{Name: p.Name, Namespace: p.Namespace}, ClusterLayers: layers}
	if lastGood != nil {
		b.Persona.Harness = lastGood.Persona.Harness
	} else if p.Spec.Harness != nil {
		b.Persona.Harness = string(*p.Spec.Harness)
	}
	for _, v := range p.Spec.Variants {
		b.Variants = append(b.Variants, render.Variant{Name: v.Name, Harness: string(v.Harness)})
	}
	return b
}

// fallbackOutcome is the failure as the ConfigMap's fallback tells it: the
// render's own reason with a note for the last good inputs, GuardrailsOnly
// for the guardrails alone.
func fallbackOutcome(failure outcome, fallback string) outcome {
	switch fallback {
	case delivery.FallbackLastGoodInputs:
		failure.message += "; the current ClusterPromptLayers were applied to the last good inputs, which the ConfigMap holds"
	case delivery.FallbackGuardrailsOnly:
		failure.message = fmt.Sprintf("the ConfigMap holds the ClusterPromptLayers alone: the render failed (%s: %s), and so did the last good inputs with the current ClusterPromptLayers",
			failure.reason, failure.message)
		failure.reason = v1alpha1.GuardrailsOnlyReason
	}
	return failure
}

func (r *reconciler) guardrailDeadline() time.Duration {
	return cmp.Or(r.GuardrailDeadline, DefaultGuardrailDeadline)
}
