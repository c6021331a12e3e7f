package main

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

// parallel runs do(0..n-1) on at most workers goroutines and returns the
// first error; after an error or a cancelled ctx no new item starts. Every
// goroutine has returned when it returns.
func parallel(ctx context.Context, workers, n int, do func(ctx context.Context, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(workers, 1))
	for i := range n {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return do(gctx, i) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// world is the objects of one measured namespace and what the controller
// would write for them, rendered offline.
type world struct {
	ns string
	// namespace is ns's Namespace, labelled so that guardrail selects it.
	namespace *corev1.Namespace
	// guardrail is the round's ClusterPromptLayer, which selects every
	// persona of the world.
	guardrail *v1alpha1.ClusterPromptLayer
	parent    *v1alpha1.Persona
	layers    []*v1alpha1.PromptLayer
	personas  []*v1alpha1.Persona
	// renders[i] is the render of personas[i]; parentRender the parent's.
	renders      []*rendered
	parentRender *rendered
	// live and cms are the personas and ConfigMaps as the floor wrote them.
	live []*v1alpha1.Persona
	cms  []*corev1.ConfigMap
}

// revision is the revision of each edited template of a world.
type revision struct {
	// layer is the shared PromptLayer's, guardrail the ClusterPromptLayer's,
	// parent the extension of the Persona every measured Persona inherits,
	// platform the PromptPlatform's (0: there is none).
	layer, guardrail, parent, platform int
}

// The revisions of the phases: the objects as created, then after each
// edit in turn.
var (
	created         = revision{layer: 1, guardrail: 1, parent: 1}
	layerEdited     = revision{layer: 2, guardrail: 1, parent: 1}
	guardrailEdited = revision{layer: 2, guardrail: 2, parent: 1}
	parentEdited    = revision{layer: 2, guardrail: 2, parent: 2}
	platformCreated = revision{layer: 2, guardrail: 2, parent: 2, platform: 1}
	platformEdited  = revision{layer: 2, guardrail: 2, parent: 2, platform: 2}
)

// newWorld builds the objects of namespace ns in round; with renders, it
// renders them offline, the edited templates at rev.
func newWorld(ns string, round, n int, withRenders bool, rev revision) (*world, error) {
	w := &world{
		ns:        ns,
		namespace: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: roundLabels(round)}},
		guardrail: guardrail(round, guardrailTemplate(rev.guardrail)),
		parent:    parentPersona(ns, rev.parent),
		layers:    layers(ns, sharedTemplate(rev.layer)),
	}
	for i := range n {
		w.personas = append(w.personas, persona(ns, i))
	}
	if !withRenders {
		return w, nil
	}
	objs := []client.Object{w.namespace, w.guardrail, w.parent}
	for _, l := range w.layers {
		objs = append(objs, l)
	}
	if rev.platform > 0 {
		objs = append(objs, promptPlatform(rev.platform))
	}
	o := newOffline(objs...)
	var err error
	if w.parentRender, err = o.render(w.parent); err != nil {
		return nil, err
	}
	w.renders = make([]*rendered, n)
	err = parallel(context.Background(), runtime.NumCPU(), n, func(_ context.Context, i int) (err error) {
		w.renders[i], err = o.render(w.personas[i])
		return err
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// renderedHashes renders the personas of namespace ns in round offline,
// the edited templates at rev, and returns only their ConfigMaps' content
// hashes, by ConfigMap name: what the controller writes for that revision.
func renderedHashes(ns string, round, n int, rev revision) (map[string]string, error) {
	w, err := newWorld(ns, round, n, true, rev)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(w.renders))
	for _, r := range w.renders {
		out[r.configMap.Name] = r.configMap.Annotations[delivery.ContentHashAnnotation]
	}
	return out, nil
}

// createShared creates the layers and the parent persona, in that order.
func (w *world) createShared(ctx context.Context, c client.Client) error {
	for _, l := range w.layers {
		if err := c.Create(ctx, l.DeepCopy()); err != nil {
			return fmt.Errorf("create PromptLayer %s/%s: %w", w.ns, l.Name, err)
		}
	}
	if err := c.Create(ctx, w.parent.DeepCopy()); err != nil {
		return fmt.Errorf("create Persona %s/%s: %w", w.ns, w.parent.Name, err)
	}
	return nil
}

// convergenceFloor does with a bare client what the operator has to do for
// the world at the least: create every object (as the users do), and for
// each persona create its ConfigMap and patch its status; PromptLayers get
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
		cm := r.configMap.DeepCopy()
		cm.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(obj, v1alpha1.GroupVersion.WithKind("Persona"))}
		if err := c.Create(ctx, cm); err != nil {
			return nil, nil, fmt.Errorf("floor: create ConfigMap %s: %w", cm.Name, err)
		}
		if err := patchStatus(ctx, c, obj, r); err != nil {
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
	w.live, w.cms = make([]*v1alpha1.Persona, len(w.personas)), make([]*corev1.ConfigMap, len(w.personas))
	err := parallel(ctx, workers, len(w.personas), func(ctx context.Context, i int) (err error) {
		w.live[i], w.cms[i], err = deliver(ctx, w.personas[i], w.renders[i])
		return err
	})
	if err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// patchStatus patches the persona's status to the render's, as the
// controller does: one merge patch of the status subresource.
func patchStatus(ctx context.Context, c client.Client, p *v1alpha1.Persona, r *rendered) error {
	original := p.DeepCopy()
	p.Status = *r.status.DeepCopy()
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

// fanOutFloor rewrites, with a bare client, the ConfigMaps convergenceFloor
// wrote in w to the renders of to: only the ConfigMap updates, or with spec,
// also each status patch the controller must write (a fan-out has no Event
// per dependent, only one Propagated Event on the changed object, a single
// write the floor leaves out). It runs before the manager starts, so nobody
// watches these objects. It returns the time of the writes.
func fanOutFloor(ctx context.Context, c client.Client, w *world, to []*rendered, workers int, spec bool) (time.Duration, error) {
	start := time.Now()
	err := parallel(ctx, workers, len(w.cms), func(ctx context.Context, i int) error {
		cm := w.cms[i]
		cm.Data = to[i].configMap.Data
		cm.Annotations = to[i].configMap.Annotations
		if err := c.Update(ctx, cm); err != nil {
			return fmt.Errorf("fan-out floor: update ConfigMap %s: %w", cm.Name, err)
		}
		if !spec {
			return nil
		}
		return patchStatus(ctx, c, w.live[i], to[i])
	})
	if err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// deleteAll deletes every Persona, PromptLayer, ConfigMap and Event of ns:
// envtest runs no garbage collector or namespace controller. The round's
// ClusterPromptLayer, cluster-scoped, is deleted by deleteGuardrail.
func deleteAll(ctx context.Context, c client.Client, ns string) error {
	for _, obj := range []client.Object{&v1alpha1.Persona{}, &v1alpha1.PromptLayer{}, &corev1.ConfigMap{}, &eventsv1.Event{}} {
		if err := c.DeleteAllOf(ctx, obj, client.InNamespace(ns)); err != nil {
			return fmt.Errorf("delete every %T of %s: %w", obj, ns, err)
		}
	}
	return nil
}

// createGuardrail creates the round's ClusterPromptLayer and waits until
// the manager has reported it Ready for its generation, so that its status
// write falls before the phase that follows.
func createGuardrail(ctx context.Context, c client.Client, l *v1alpha1.ClusterPromptLayer) error {
	obj := l.DeepCopy()
	if err := c.Create(ctx, obj); err != nil {
		return fmt.Errorf("create ClusterPromptLayer %s: %w", l.Name, err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return fmt.Errorf("get ClusterPromptLayer %s: %w", l.Name, err)
		}
		ready := meta.FindStatusCondition(obj.Status.Conditions, "Ready")
		if ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == obj.Generation {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ClusterPromptLayer %s is not Ready after a minute (conditions: %v)", l.Name, obj.Status.Conditions)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// deleteGuardrail deletes the round's ClusterPromptLayer, if it exists.
func deleteGuardrail(ctx context.Context, c client.Client, l *v1alpha1.ClusterPromptLayer) error {
	if err := c.Delete(ctx, &v1alpha1.ClusterPromptLayer{ObjectMeta: metav1.ObjectMeta{Name: l.Name}}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete ClusterPromptLayer %s: %w", l.Name, err)
	}
	return nil
}
