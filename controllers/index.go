package controllers

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// dependencyIndex indexes Personas by the objects their last render read
// (status.dependencies), as "<Kind>/<name>".
const dependencyIndex = "status.dependencies"

// templateFromIndex indexes PromptLayers by the ConfigMap their templateFrom names.
const templateFromIndex = "spec.templateFrom.configMapKeyRef.name"

func dependencyKey(kind, name string) string { return kind + "/" + name }

func indexDependencies(obj client.Object) []string {
	p := obj.(*v1alpha1.Persona)
	keys := make([]string, len(p.Status.Dependencies))
	for i, d := range p.Status.Dependencies {
		keys[i] = dependencyKey(d.Kind, d.Name)
	}
	return keys
}

func indexTemplateFrom(obj client.Object) []string {
	l := obj.(*v1alpha1.PromptLayer)
	if l.Spec.TemplateFrom == nil {
		return nil
	}
	return []string{l.Spec.TemplateFrom.ConfigMapKeyRef.Name}
}

// setupIndexes registers the field indexes the controllers look dependents up by.
func setupIndexes(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.Persona{}, dependencyIndex, indexDependencies); err != nil {
		return err
	}
	return mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.PromptLayer{}, templateFromIndex, indexTemplateFrom)
}

// dependents lists the Personas whose last render read the object kind/name
// of namespace, through the index: directly or, since the resolver records
// the whole chain and every include, transitively.
func dependents(ctx context.Context, c client.Reader, kind, namespace, name string) []reconcile.Request {
	var list v1alpha1.PersonaList
	if err := c.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{dependencyIndex: dependencyKey(kind, name)}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list dependents", "kind", kind, "name", name)
		return nil
	}
	reqs := make([]reconcile.Request, len(list.Items))
	for i, p := range list.Items {
		reqs[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)}
	}
	return reqs
}
