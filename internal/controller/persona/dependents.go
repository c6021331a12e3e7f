package persona

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

// objectRef names an object a Persona's render reads.
type objectRef struct {
	Kind, Namespace, Name string
}

// dependents lists the Personas a change of ref re-renders (personas.md#conditions, order
// never matters). Three sources, so that none depends on which informer
// event reaches its cache first:
//   - what the Personas' specs name, hop by hop: a Persona that lists a
//     layer, and every Persona that inherits from it; a layer that includes
//     or reads ref through templateFrom, and everything that names that layer;
//   - what their last render read (status.dependencies), transitively;
//   - the Personas whose last render found ref missing (awaiting).
func dependents(ctx context.Context, c client.Reader, waiting *awaiting, ref objectRef) []reconcile.Request {
	personas := sets.New(waiting.waiters(ref)...)
	seen := sets.New[string]()
	queue := []string{kube.DependencyKey(ref.Kind, ref.Name)}
	for len(queue) > 0 {
		key := queue[0]
		queue = queue[1:]
		if seen.Has(key) {
			continue
		}
		seen.Insert(key)
		for _, index := range []string{kube.ReferenceIndex, kube.DependencyIndex} {
			for _, name := range kube.ListNames(ctx, c, &v1alpha1.PersonaList{}, ref.Namespace, index, key) {
				personas.Insert(name)
				queue = append(queue, kube.DependencyKey(v1alpha1.PersonaKind, name))
			}
		}
		for _, name := range kube.ListNames(ctx, c, &v1alpha1.PromptLayerList{}, ref.Namespace, kube.ReferenceIndex, key) {
			queue = append(queue, kube.DependencyKey(v1alpha1.PromptLayerKind, name))
		}
	}
	reqs := make([]reconcile.Request, 0, personas.Len())
	for _, name := range sets.List(personas) {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ref.Namespace, Name: name}})
	}
	return reqs
}

// inConflict enqueues the Persona whose ConfigMap name obj has when a
// Persona does not control it.
func (r *reconciler) inConflict(_ context.Context, obj *metav1.PartialObjectMetadata) []reconcile.Request {
	if name, ok := delivery.PersonaOfConfigMap(obj.GetName()); ok && !delivery.ControlledByPersona(obj, name) {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
	}
	return nil
}

// configMapDependents enqueues the Personas that read a ConfigMap through
// templateFrom, and the Persona whose ConfigMap name it has when a Persona
// does not control it (a Persona that controls it is its owner, which the
// owner watch enqueues), so that a Persona in conflict retries once the
// foreign ConfigMap is gone.
func (r *reconciler) configMapDependents(ctx context.Context, obj *metav1.PartialObjectMetadata) []reconcile.Request {
	reqs := dependents(ctx, r.Client, r.waiting, objectRef{Kind: v1alpha1.ConfigMapKind, Namespace: obj.GetNamespace(), Name: obj.GetName()})
	return append(reqs, r.inConflict(ctx, obj)...)
}
