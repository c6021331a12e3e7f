package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// floorTurn is which of a round's two floor measurements is being made.
type floorTurn struct {
	// namespace and phase tell its namespaces and phases from the other
	// turn's.
	namespace, phase string
	// of is the measurement of a bracket this turn fills.
	of func(*bracket) *timed
}

var (
	before = floorTurn{of: func(b *bracket) *timed { return &b.before }}
	after  = floorTurn{namespace: "-after", phase: ", after the phases", of: func(b *bracket) *timed { return &b.after }}
)

// floors measures the five floors of round i with a bare client, without
// the webhook and with the manager stopped, so that nobody watches what the
// bare client writes, into the turn's half of each of rr's brackets.
func (h *harness) floors(ctx context.Context, i int, turn floorTurn, rr *roundResult) error {
	floorNS, specNS := fmt.Sprintf("scale-floor-%d%s", i, turn.namespace), fmt.Sprintf("scale-floor-spec-%d%s", i, turn.namespace)
	// Labelled as the round's measured namespace, and rendered with its
	// ClusterPromptLayer, so the floors write what the operator writes.
	for _, ns := range []string{floorNS, specNS} {
		if err := h.createNamespace(ctx, ns, roundLabels(i)); err != nil {
			return err
		}
	}
	step("round %d: rendering %d personas offline for the floors", i, h.o.n)
	floor, err := newWorld(floorNS, i, h.o.n, true, created)
	if err != nil {
		return err
	}
	floorEdited, err := newWorld(floorNS, i, h.o.n, true, layerEdited)
	if err != nil {
		return err
	}
	spec, err := newWorld(specNS, i, h.o.n, true, created)
	if err != nil {
		return err
	}
	specEdited, err := newWorld(specNS, i, h.o.n, true, layerEdited)
	if err != nil {
		return err
	}
	hooks, err := removeWebhooks(ctx, h.c)
	if err != nil {
		return err
	}
	if err := waitWebhook(ctx, h.c, webhookNamespace, false); err != nil {
		return err
	}
	c, workers := h.c, h.o.workers
	floors := []struct {
		name string
		into *timed
		do   func() (time.Duration, error)
	}{
		{"convergence floor: a bare client creates the objects, each ConfigMap and status", turn.of(&rr.floors.convergence),
			func() (time.Duration, error) { return convergenceFloor(ctx, c, floor, workers, false) }},
		{"fan-out floor: a bare client updates the ConfigMaps", turn.of(&rr.floors.fanOut),
			func() (time.Duration, error) {
				return fanOutFloor(ctx, c, floor, floorEdited.renders, workers, false, shortestFloorHistory)
			}},
		{"convergence floor with Events: as above, plus each Rendered Event", turn.of(&rr.floors.convergenceSpec),
			func() (time.Duration, error) { return convergenceFloor(ctx, c, spec, workers, true) }},
		{"fan-out floor with status: each ConfigMap and status", turn.of(&rr.floors.fanOutSpec),
			func() (time.Duration, error) {
				return fanOutFloor(ctx, c, spec, specEdited.renders, workers, true, shortestFloorHistory)
			}},
		{fmt.Sprintf("fan-out floor with the last fan-out's history: as above, back to the first render, each status with %d revisions", longestFloorHistory),
			turn.of(&rr.floors.fanOutSpecLong),
			func() (time.Duration, error) {
				return fanOutFloor(ctx, c, spec, spec.renders, workers, true, longestFloorHistory)
			}},
	}
	for _, f := range floors {
		name, what, _ := strings.Cut(f.name, ":")
		step("round %d: %s%s:%s (%d personas, %d workers)", i, name, turn.phase, what, h.o.n, workers)
		ph, err := h.beginWindow(ctx, name+turn.phase, false)
		if err != nil {
			return err
		}
		// The last round's floors are profiled, as its phases are.
		last := i == h.o.rounds
		if last {
			h.prof.startFloor(ctx, name+turn.phase)
		}
		start := time.Now()
		if f.into.took, err = f.do(); err != nil {
			return err
		}
		f.into.mid = midway(start, f.into.took)
		h.r.end(ph, nil)
		if last {
			h.prof.wait()
		}
		step("  %s", f.into.took.Round(time.Millisecond))
	}
	for _, ns := range []string{floorNS, specNS} {
		if err := deleteAll(ctx, c, ns); err != nil {
			return err
		}
	}
	return hooks.restore(ctx, c)
}

// convergenceFloor does with a bare client what the operator has to do for
// the world at the least: create every object (as the users do), and for
// each persona create its ConfigMap and its first revision's snapshot, and
// patch its status; PromptLayers get
// their Ready status too. withEvents adds the Rendered Event per persona
// that personas.md#conditions requires. It returns the time from the first create to the
// last write, and keeps the objects it wrote in w for fanOutFloor.
func convergenceFloor(ctx context.Context, c client.Client, w *world, workers int, withEvents bool) (time.Duration, error) {
	start := time.Now()
	for _, l := range w.layers {
		obj := l.DeepCopy()
		if err := c.Create(ctx, obj); err != nil {
			return 0, fmt.Errorf("floor: create PromptLayer %s: %w", l.Name, err)
		}
		original := obj.DeepCopy()
		obj.Status.ObservedGeneration = obj.Generation
		meta.SetStatusCondition(&obj.Status.Conditions, metav1.Condition{
			Type: "Ready", Status: metav1.ConditionTrue, Reason: "Valid", Message: "the template parses", ObservedGeneration: obj.Generation,
		})
		if err := c.Status().Patch(ctx, obj, client.MergeFrom(original)); err != nil {
			return 0, fmt.Errorf("floor: patch the status of PromptLayer %s: %w", l.Name, err)
		}
	}
	deliver := func(ctx context.Context, p *v1alpha1.Persona, r *rendered) (*v1alpha1.Persona, *corev1.ConfigMap, error) {
		obj := p.DeepCopy()
		if err := c.Create(ctx, obj); err != nil {
			return nil, nil, fmt.Errorf("floor: create Persona %s: %w", p.Name, err)
		}
		cm, st := numberRevision(r, 1, v1alpha1.RevisionInput{Kind: "Persona", Namespace: obj.Namespace, Name: obj.Name, Generation: 1})
		cm.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(obj, v1alpha1.GroupVersion.WithKind("Persona"))}
		if err := c.Create(ctx, cm); err != nil {
			return nil, nil, fmt.Errorf("floor: create ConfigMap %s: %w", cm.Name, err)
		}
		if err := createSnapshot(ctx, c, obj, cm, 1); err != nil {
			return nil, nil, err
		}
		if err := patchStatus(ctx, c, obj, st); err != nil {
			return nil, nil, err
		}
		if withEvents {
			if err := createEvent(ctx, c, obj, r); err != nil {
				return nil, nil, err
			}
		}
		return obj, cm, nil
	}
	if _, _, err := deliver(ctx, w.parent, w.parentRender); err != nil {
		return 0, err
	}
	w.live, w.cms, w.delivered = make([]*v1alpha1.Persona, len(w.personas)), make([]*corev1.ConfigMap, len(w.personas)), 1
	err := parallel(ctx, workers, len(w.personas), func(ctx context.Context, i int) (err error) {
		w.live[i], w.cms[i], err = deliver(ctx, w.personas[i], w.renders[i])
		return err
	})
	if err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// patchStatus patches the persona's status to st, as the controller does:
// one merge patch of the status subresource.
func patchStatus(ctx context.Context, c client.Client, p *v1alpha1.Persona, st v1alpha1.PersonaStatus) error {
	original := p.DeepCopy()
	p.Status = st
	p.Status.ObservedGeneration = p.Generation
	for i := range p.Status.Conditions {
		p.Status.Conditions[i].ObservedGeneration = p.Generation
	}
	if err := c.Status().Patch(ctx, p, client.MergeFrom(original)); err != nil {
		return fmt.Errorf("floor: patch the status of Persona %s: %w", p.Name, err)
	}
	return nil
}

// createEvent creates the Normal Rendered Event of personas.md#conditions, as the
// controller's events.k8s.io recorder does.
func createEvent(ctx context.Context, c client.Client, p *v1alpha1.Persona, r *rendered) error {
	now := time.Now()
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", p.Name, now.UnixNano()), Namespace: p.Namespace},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: "persona-operator",
		ReportingInstance:   "persona-operator-scale-floor",
		Action:              "Render",
		Reason:              "Rendered",
		Regarding: corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Persona",
			Namespace: p.Namespace, Name: p.Name, UID: p.UID, ResourceVersion: p.ResourceVersion},
		Note: r.note,
		Type: corev1.EventTypeNormal,
	}
	if err := c.Create(ctx, ev); err != nil {
		return fmt.Errorf("floor: create Event %s: %w", ev.Name, err)
	}
	return nil
}

// fanOutFloor rewrites, with a bare client, the ConfigMaps w holds to the
// renders of to, as revision n, whose status.history holds n revisions:
// only the ConfigMap updates, or with spec, also every other write of the
// revision the controller must make, in its order: the new snapshot, the
// status patch and the deletion of the snapshot of the revision w
// delivered (a fan-out has no Event per dependent, only one Propagated
// Event on the changed object, a single write the floor leaves out). It
// runs before the manager starts, so nobody watches these objects. It
// returns the time of the writes.
func fanOutFloor(ctx context.Context, c client.Client, w *world, to []*rendered, workers int, spec bool, n int64) (time.Duration, error) {
	start := time.Now()
	err := parallel(ctx, workers, len(w.cms), func(ctx context.Context, i int) error {
		p := w.live[i]
		next, st := numberRevision(to[i], n, v1alpha1.RevisionInput{Kind: "PromptLayer", Namespace: p.Namespace, Name: sharedLayer, Generation: n})
		cm := w.cms[i]
		cm.Data, cm.Annotations = next.Data, next.Annotations
		if err := c.Update(ctx, cm); err != nil {
			return fmt.Errorf("fan-out floor: update ConfigMap %s: %w", cm.Name, err)
		}
		if !spec {
			return nil
		}
		if err := createSnapshot(ctx, c, p, cm, n); err != nil {
			return err
		}
		if err := patchStatus(ctx, c, p, st); err != nil {
			return err
		}
		return deleteSnapshot(ctx, c, p, w.delivered)
	})
	if err != nil {
		return 0, err
	}
	w.delivered = n
	return time.Since(start), nil
}
