package persona

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/resolve"
)

// A ClusterPromptLayer selects Personas by their Namespace's labels and
// their own, so it is found by selection rather than by reference: a change
// to it, or to a Namespace's labels, re-renders the Personas selected
// before or after the change (clusterpromptlayers.md).

// Namespaces are read from the cache: watch, and list where the API server
// serves no streaming lists (see the markers of controller.go).
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=list;watch

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// watchClusterLayers enqueues the Personas a ClusterPromptLayer selects when
// it is created or deleted, and those its old or new spec selects when its
// spec changes.
func (r *reconciler) watchClusterLayers(mgr ctrl.Manager) source.Source {
	enqueue := func(ctx context.Context, q queue, layers ...*v1alpha1.ClusterPromptLayer) int {
		reqs := r.selectedPersonas(ctx, "", func(p *v1alpha1.Persona, nsLabels labels.Set) bool {
			for _, l := range layers {
				if resolve.Selects(l, nsLabels, p.Labels) {
					return true
				}
			}
			return false
		})
		for _, req := range reqs {
			q.Add(req)
		}
		return len(reqs)
	}
	return source.Kind(mgr.GetCache(), &v1alpha1.ClusterPromptLayer{}, propagating(r, func(ctx context.Context, q queue, old, cur *v1alpha1.ClusterPromptLayer) int {
		var layers []*v1alpha1.ClusterPromptLayer
		for _, l := range []*v1alpha1.ClusterPromptLayer{old, cur} {
			if l != nil {
				layers = append(layers, l)
			}
		}
		return enqueue(ctx, q, layers...)
	}))
}

// watchNamespaceLabels enqueues, when a Namespace's labels change, its
// Personas whose selected ClusterPromptLayers change with them.
func (r *reconciler) watchNamespaceLabels(mgr ctrl.Manager) source.Source {
	return source.Kind(mgr.GetCache(), &corev1.Namespace{}, handler.TypedFuncs[*corev1.Namespace, reconcile.Request]{
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[*corev1.Namespace], q queue) {
			if maps.Equal(e.ObjectOld.Labels, e.ObjectNew.Labels) {
				return
			}
			var layers v1alpha1.ClusterPromptLayerList
			if err := r.List(ctx, &layers, client.UnsafeDisableDeepCopy); err != nil || len(layers.Items) == 0 {
				return
			}
			name := e.ObjectNew.Name
			before, after := resolve.SelectorLabels(name, e.ObjectOld.Labels), resolve.SelectorLabels(name, e.ObjectNew.Labels)
			for _, req := range r.selectedPersonas(ctx, name, func(p *v1alpha1.Persona, _ labels.Set) bool {
				for i := range layers.Items {
					if resolve.Selects(&layers.Items[i], before, p.Labels) != resolve.Selects(&layers.Items[i], after, p.Labels) {
						return true
					}
				}
				return false
			}) {
				q.Add(req)
			}
		},
	})
}

// selectedPersonas lists the Personas of namespace (all: "") for which
// selected holds, given their Namespace's labels.
func (r *reconciler) selectedPersonas(ctx context.Context, namespace string, selected func(*v1alpha1.Persona, labels.Set) bool) []reconcile.Request {
	var personas v1alpha1.PersonaList
	if err := r.List(ctx, &personas, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list Personas for ClusterPromptLayers")
		return nil
	}
	nsLabels := map[string]labels.Set{}
	var reqs []reconcile.Request
	for i := range personas.Items {
		p := &personas.Items[i]
		l, ok := nsLabels[p.Namespace]
		if !ok {
			var err error
			if l, err = resolve.NamespaceLabels(ctx, r.Client, p.Namespace); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "read Namespace labels", "namespace", p.Namespace)
				continue
			}
			nsLabels[p.Namespace] = l
		}
		if selected(p, l) {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}})
		}
	}
	return reqs
}
