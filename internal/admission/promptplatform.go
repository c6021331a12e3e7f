package admission

import (
	"reflect"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

var promptPlatformSpecType = reflect.TypeFor[v1alpha1.PromptPlatformSpec]()

// ValidatePromptPlatform validates a PromptPlatform object against
// promptplatforms.md#writing-a-promptplatform-spec: the name default, and
// sections checked as a Persona's platform overrides are. It returns every
// problem found.
func ValidatePromptPlatform(obj map[string]any) field.ErrorList {
	_, errs := validateEnvelope(obj, validatePromptPlatformName)
	specPath := field.NewPath("spec")
	errs = append(errs, checkShape(specPath, obj["spec"], promptPlatformSpecType)...)
	spec, state := getMap(obj, "spec")
	if state == wrongType {
		return errs
	}
	if d, state := getString(spec, "description"); state == present && len(d) > maxDescriptionBytes {
		errs = append(errs, field.TooLong(specPath.Child("description"), nil, maxDescriptionBytes))
	}
	sections, _ := getMap(spec, "sections")
	return append(errs, validatePlatform(specPath.Child("sections"), sections, newTemplateBudget())...)
}

// validatePromptPlatformName repeats the CRD's rule, so that the CLI refuses
// offline what the API server would.
func validatePromptPlatformName(p *field.Path, name string) field.ErrorList {
	if name == v1alpha1.PromptPlatformName {
		return nil
	}
	return field.ErrorList{field.Invalid(p, truncate(name), "must be default: a cluster has at most one PromptPlatform, and every Persona renders on the one named default")}
}
