package admission

import (
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
)

var layerModes = []v1alpha1.LayerMode{
	v1alpha1.LayerModeAppend, v1alpha1.LayerModePrepend, v1alpha1.LayerModeReplace, v1alpha1.LayerModeDisable,
}

var promptLayerSpecType = reflect.TypeFor[v1alpha1.PromptLayerSpec]()

// ValidatePromptLayer validates a PromptLayer object against promptlayers.md#writing-a-promptlayer-spec and personas.md#validating-before-apply,
// and returns every problem found.
func ValidatePromptLayer(obj map[string]any) field.ErrorList {
	name, errs := validateEnvelope(obj, validateSubdomain)
	specPath := field.NewPath("spec")
	errs = append(errs, checkShape(specPath, obj["spec"], promptLayerSpecType)...)
	spec, state := getMap(obj, "spec")
	if state == wrongType {
		return errs
	}
	// A missing spec is an empty one: it still needs a template.

	if src, state := getString(spec, "source"); state == present {
		errs = append(errs, checkPattern(specPath.Child("source"), src, nameRE,
			"user, package, app, run or a custom source name: "+nameWhat)...)
	}
	mode, modeState := getString(spec, "mode")
	if modeState == present && !isLayerMode(mode) {
		errs = append(errs, field.NotSupported(specPath.Child("mode"), truncate(mode), layerModes))
	}

	// Presence is the key's, not the value's: template: "" is a template.
	// Only null counts as absent, as the API server prunes it.
	_, hasTemplate := lookup(spec, "template")
	_, hasTemplateFrom := lookup(spec, "templateFrom")
	switch {
	case hasTemplate && hasTemplateFrom:
		errs = append(errs, field.Forbidden(specPath.Child("templateFrom"), "may not be set together with template; set exactly one of template and templateFrom"))
	case !hasTemplate && !hasTemplateFrom && (modeState != present || mode != string(v1alpha1.LayerModeDisable)):
		errs = append(errs, field.Required(specPath, "set exactly one of template and templateFrom (only a layer with mode: disable may have neither)"))
	}

	if tmpl, state := getString(spec, "template"); state == present {
		errs = append(errs, checkTemplate(specPath.Child("template"), render.KindLayer, name, tmpl, nil)...)
	}
	if from, state := getMap(spec, "templateFrom"); state == present {
		errs = append(errs, validateTemplateFrom(specPath.Child("templateFrom"), from)...)
	}
	return errs
}

func isLayerMode(m string) bool { return slices.Contains(layerModes, v1alpha1.LayerMode(m)) }

// validateTemplateFrom checks the ConfigMap key reference; whether the
// ConfigMap exists is the controller's to report.
func validateTemplateFrom(p *field.Path, from map[string]any) field.ErrorList {
	rp := p.Child("configMapKeyRef")
	ref, state := getMap(from, "configMapKeyRef")
	switch state {
	case absent:
		return field.ErrorList{field.Required(rp, "the ConfigMap name and key holding the template")}
	case wrongType:
		return nil
	}
	var errs field.ErrorList
	switch name, state := getString(ref, "name"); {
	case state == absent || (state == present && name == ""):
		errs = append(errs, field.Required(rp.Child("name"), "the name of a ConfigMap in the same namespace"))
	case state == present:
		errs = append(errs, validateSubdomain(rp.Child("name"), name)...)
	}
	switch key, state := getString(ref, "key"); {
	case state == absent || (state == present && key == ""):
		errs = append(errs, field.Required(rp.Child("key"), "the key of the ConfigMap's data holding the template"))
	case state == present:
		errs = append(errs, validateConfigMapKey(rp.Child("key"), key)...)
	}
	return errs
}
