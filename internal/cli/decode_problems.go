package cli

import (
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/manifest"
)

// invalidReference is the problem of a persona that reads an object which
// cannot be read as its kind: the object's own problems are reported at its
// document, so this one points there instead of repeating them.
func invalidReference(obj *manifest.Object) string {
	return fmt.Sprintf("%s %q is not valid (%s); fix the problems reported there", obj.Kind, obj.Name, obj.Origin)
}

// invalidReferenceField is the field of p that leads to obj: the inherit or
// layers entry naming it, or the list when it is reached through another
// object.
func invalidReferenceField(p *v1alpha1.Persona, obj *manifest.Object) string {
	switch obj.Kind {
	case v1alpha1.PersonaKind:
		if i := slices.Index(p.Spec.Inherit, v1alpha1.PersonaName(obj.Name)); i >= 0 {
			return inheritPath.Index(i).String()
		}
		return inheritPath.String()
	case v1alpha1.PromptLayerKind:
		return layerField(p, obj.Name, true)
	case v1alpha1.ConfigMapKind:
		return layersPath.String()
	}
	return specPath.String()
}

// addDecodeError reports an object that cannot be read as its kind, each
// problem at its own field.
func (ps *problems) addDecodeError(o *manifest.Object, err error) {
	var invalid *manifest.InvalidError
	if !errors.As(err, &invalid) || invalid.Object != o {
		ps.add(o, specPath.String(), err.Error())
		return
	}
	for _, e := range invalid.Errs {
		ps.add(o, e.Field, e.ErrorBody())
	}
}

// coreObjectProblems decodes a ConfigMap or Namespace as a render reads it,
// so a value of the wrong type is found on the object itself.
func coreObjectProblems(o *manifest.Object) error {
	switch o.Kind {
	case v1alpha1.ConfigMapKind:
		return o.Decode(&corev1.ConfigMap{})
	case v1alpha1.NamespaceKind:
		return o.Decode(&corev1.Namespace{})
	}
	return nil
}
