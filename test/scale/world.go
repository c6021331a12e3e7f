package main

import (
	"context"
	"fmt"
	"runtime"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

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
	// live and cms are the personas and ConfigMaps as the floor wrote them,
	// at revision delivered.
	live      []*v1alpha1.Persona
	cms       []*corev1.ConfigMap
	delivered int64
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
