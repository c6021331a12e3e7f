// Package admission implements the admission rules of personas.md#validating-before-apply over raw
// objects: the map[string]any that JSON or YAML decodes to, as in
// unstructured.Unstructured.Object. It works on the raw map rather than the
// typed API structs because decoding into them silently drops unknown keys and
// fails on the first type mismatch, while admission must report every problem,
// each with its field path. The validating webhook and `kubectl-persona
// validate` both call it, so the CLI checks offline exactly what the cluster
// would reject, including the structural rules the CRD schema repeats.
//
// Containers must be map[string]any and []any, as encoding/json,
// sigs.k8s.io/yaml and unstructured produce; numbers may be any Go numeric
// type. A null value counts as unset, because the API server prunes nulls of
// non-nullable fields before admission.
package admission

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// Validate dispatches on obj["kind"] to ValidatePersona, ValidatePromptLayer,
// ValidateClusterPromptLayer or ValidatePromptPlatform. Objects of other kinds are not ours: nil.
func Validate(obj map[string]any) field.ErrorList {
	kind, _ := obj["kind"].(string)
	switch kind {
	case v1alpha1.PersonaKind:
		return ValidatePersona(obj)
	case v1alpha1.PromptLayerKind:
		return ValidatePromptLayer(obj)
	case v1alpha1.ClusterPromptLayerKind:
		return ValidateClusterPromptLayer(obj)
	case v1alpha1.PromptPlatformKind:
		return ValidatePromptPlatform(obj)
	}
	return nil
}

// topLevelKeys are the keys an object of this API may have.
var topLevelKeys = []string{"apiVersion", "kind", "metadata", "spec", "status"}

// validateEnvelope checks everything around spec: unknown top-level keys (the
// CLI reads files, where a misspelled `sepc:` must not pass silently), the
// types of the known ones, and metadata.name with the kind's name rule. It
// returns the name, or "" when there is none.
func validateEnvelope(obj map[string]any, nameRule func(*field.Path, string) field.ErrorList) (string, field.ErrorList) {
	var keys listedErrors
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		switch k {
		case "apiVersion", "kind":
			if v := obj[k]; v != nil {
				if _, ok := v.(string); !ok {
					keys.add(func() *field.Error { return typeError(field.NewPath(k), v, "a string") })
				}
			}
		case "metadata", "status":
			if v := obj[k]; v != nil {
				if _, ok := v.(map[string]any); !ok {
					keys.add(func() *field.Error { return typeError(field.NewPath(k), v, "an object") })
				}
			}
		case "spec":
			// The strict walk of spec reports its type.
		default:
			keys.add(func() *field.Error { return unknownField(KeyPath(nil, k), k, topLevelKeys) })
		}
	}
	errs := keys.list(field.NewPath("(the object)"))

	namePath := field.NewPath("metadata", "name")
	meta, _ := obj["metadata"].(map[string]any)
	name, state := getString(meta, "name")
	switch {
	case state == wrongType:
		errs = append(errs, typeError(namePath, meta["name"], "a string"))
	case state == absent || name == "":
		errs = append(errs, field.Required(namePath, ""))
	default:
		errs = append(errs, nameRule(namePath, name)...)
	}
	return name, errs
}
