package kube

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
)

// Field indexes, each as "<Kind>/<name>" of the objects referred to.
const (
	// DependencyIndex indexes Personas by what their last render read of
	// their namespace (status.dependencies): the whole chain, transitively.
	DependencyIndex = "status.dependencies"
	// ReferenceIndex indexes Personas and PromptLayers by what their own
	// spec names: a Persona's parents, layers and the layers its templates
	// include; a PromptLayer's templateFrom ConfigMap and the layers its
	// template includes.
	ReferenceIndex = "spec.references"
)

// DependencyKey is the key of the object of kind named name in the field
// indexes.
func DependencyKey(kind, name string) string { return kind + "/" + name }

// IndexDependencies is DependencyIndex's function. It indexes the kinds a
// change of which is looked up by it, those of the Persona's namespace
// (Personas, PromptLayers, ConfigMaps). The Namespace, the
// ClusterPromptLayers and the PromptPlatform a Persona reads are read by
// every Persona they apply to, whose changes find them by selecting or
// listing Personas: under their keys the index would hold every Persona
// once more, for lookups nobody makes.
func IndexDependencies(obj client.Object) []string {
	p := obj.(*v1alpha1.Persona)
	keys := make([]string, 0, len(p.Status.Dependencies))
	for _, d := range p.Status.Dependencies {
		if indexedDependencyKinds.Has(d.Kind) {
			keys = append(keys, DependencyKey(d.Kind, d.Name))
		}
	}
	return keys
}

// indexedDependencyKinds are the kinds of the dependencies DependencyIndex holds.
var indexedDependencyKinds = sets.New(v1alpha1.PersonaKind, v1alpha1.PromptLayerKind, v1alpha1.ConfigMapKind)

// IndexPersonaReferences is ReferenceIndex's function for Personas. It
// reads only the spec, which is in the cache before
// any render of the Persona, so a lookup through it does not wait for a
// status write to reach the cache.
func IndexPersonaReferences(obj client.Object) []string {
	p := obj.(*v1alpha1.Persona)
	var keys []string
	for _, parent := range p.Spec.Inherit {
		keys = append(keys, DependencyKey(v1alpha1.PersonaKind, string(parent)))
	}
	for _, l := range p.Spec.Layers {
		keys = append(keys, DependencyKey(v1alpha1.PromptLayerKind, l.Name))
	}
	if sp := p.Spec.SystemPrompt; sp != nil {
		for key, o := range sp.Platform {
			if o.Replace != nil {
				keys = append(keys, includeKeys(render.KindPlatform, key, *o.Replace)...)
			}
		}
		for _, e := range sp.Extensions {
			keys = append(keys, includeKeys(render.KindExtension, e.ID, e.Template)...)
		}
	}
	return compact(keys)
}

// IndexLayerReferences is ReferenceIndex's function for PromptLayers.
func IndexLayerReferences(obj client.Object) []string {
	l := obj.(*v1alpha1.PromptLayer)
	var keys []string
	if l.Spec.TemplateFrom != nil {
		keys = append(keys, DependencyKey(v1alpha1.ConfigMapKind, l.Spec.TemplateFrom.ConfigMapKeyRef.Name))
	}
	if l.Spec.Template != nil {
		keys = append(keys, includeKeys(render.KindLayer, l.Name, *l.Spec.Template)...)
	}
	return compact(keys)
}

func includeKeys(kind render.SectionKind, name, src string) []string {
	var keys []string
	for _, layer := range render.Default().Includes(kind, name, src) {
		keys = append(keys, DependencyKey(v1alpha1.PromptLayerKind, layer))
	}
	return keys
}

func compact(keys []string) []string {
	slices.Sort(keys)
	return slices.Compact(keys)
}

// SetupIndexes registers the field indexes the controllers look dependents up by.
func SetupIndexes(ctx context.Context, mgr ctrl.Manager) error {
	indexer := mgr.GetFieldIndexer()
	if err := indexer.IndexField(ctx, &v1alpha1.Persona{}, DependencyIndex, IndexDependencies); err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &v1alpha1.Persona{}, ReferenceIndex, IndexPersonaReferences); err != nil {
		return err
	}
	return indexer.IndexField(ctx, &v1alpha1.PromptLayer{}, ReferenceIndex, IndexLayerReferences)
}

// ListNames lists the names of the objects of list's kind in namespace
// whose index holds key. Only names are read, so the cache's objects are
// not copied.
func ListNames(ctx context.Context, c client.Reader, list client.ObjectList, namespace, index, key string) []string {
	err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{index: key}, client.UnsafeDisableDeepCopy)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list by index", "index", index, "key", key)
		return nil
	}
	var names []string
	_ = meta.EachListItem(list, func(o runtime.Object) error {
		names = append(names, o.(client.Object).GetName())
		return nil
	})
	return names
}
