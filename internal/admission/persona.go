package admission

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/suggest"
)

// Limits of a Persona spec (personas.md#writing-a-persona-spec); the
// description's is a ClusterPromptLayer's too.
const (
	maxDescriptionBytes = 1024
	maxInherit          = 16
	maxLayers           = 32
	maxVariants         = 16
)

var harnesses = []v1alpha1.Harness{v1alpha1.HarnessClaude, v1alpha1.HarnessCodex, v1alpha1.HarnessOpencode}

var harnessPrompts = []v1alpha1.HarnessPrompt{v1alpha1.HarnessPromptKeep, v1alpha1.HarnessPromptReplace}

var personaSpecType = reflect.TypeFor[v1alpha1.PersonaSpec]()

// ValidatePersona validates a Persona object (apiVersion/kind/metadata/spec/status
// map) against personas.md#writing-a-persona-spec and personas.md#validating-before-apply, and returns every problem found.
func ValidatePersona(obj map[string]any) field.ErrorList {
	_, errs := validateEnvelope(obj, validatePersonaName)
	errs = append(errs, validatePin(obj)...)
	specPath := field.NewPath("spec")
	shapeErrs := checkShape(specPath, obj["spec"], personaSpecType)
	errs = append(errs, shapeErrs...)
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		return errs
	}

	if d, state := getString(spec, "description"); state == present && len(d) > maxDescriptionBytes {
		errs = append(errs, field.TooLong(specPath.Child("description"), nil, maxDescriptionBytes))
	}
	if h, state := getString(spec, "harness"); state == present {
		errs = append(errs, checkHarness(specPath.Child("harness"), h)...)
	}
	errs = append(errs, checkHarnessPrompt(specPath, spec)...)
	errs = append(errs, checkSettingLengths(specPath, spec)...)
	errs = append(errs, validateInherit(specPath.Child("inherit"), spec)...)
	errs = append(errs, validateLayerRefs(specPath.Child("layers"), spec)...)
	if sp, state := getMap(spec, "systemPrompt"); state == present {
		p := specPath.Child("systemPrompt")
		platform, _ := getMap(sp, "platform")
		// The object's templates share one budget of action bytes.
		budget := newTemplateBudget()
		errs = append(errs, validatePlatform(p.Child("platform"), platform, budget)...)
		errs = append(errs, validateExtensions(p.Child("extensions"), sp, budget)...)
	}
	errs = append(errs, validateVariants(specPath.Child("variants"), spec)...)
	errs = append(errs, validateHistoryLimit(specPath.Child("revisionHistoryLimit"), spec)...)
	rolloutPath := specPath.Child("rollout")
	errs = append(errs, validateRollout(rolloutPath, spec, reportedUnder(shapeErrs, rolloutPath))...)
	// vars and context have no rules beyond their shape, checked above.
	return errs
}

// reportedUnder reports whether errs has an error at p or under it.
func reportedUnder(errs field.ErrorList, p *field.Path) bool {
	at := p.String()
	return slices.ContainsFunc(errs, func(err *field.Error) bool {
		return err.Field == at || strings.HasPrefix(err.Field, at+".") || strings.HasPrefix(err.Field, at+"[")
	})
}

func checkHarness(p *field.Path, h string) field.ErrorList {
	if slices.Contains(harnesses, v1alpha1.Harness(h)) {
		return nil
	}
	return field.ErrorList{field.NotSupported(p, truncate(h), harnesses)}
}

// checkHarnessPrompt refuses a harnessPrompt of the persona's or a
// variant's (in m, at p) other than keep or replace; unset inherits.
func checkHarnessPrompt(p *field.Path, m map[string]any) field.ErrorList {
	if v, state := getString(m, "harnessPrompt"); state == present && !slices.Contains(harnessPrompts, v1alpha1.HarnessPrompt(v)) {
		return field.ErrorList{field.NotSupported(p.Child("harnessPrompt"), truncate(v), harnessPrompts)}
	}
	return nil
}

// boundedList is spec's list key, and an error when it has more than max
// items: then only its first max items, for the list is refused for its
// length whatever the rest holds, and a list of any length that arrives on
// the webhook's port (not through the API server, whose schema refuses it
// first) costs no more to check than one of max items.
func boundedList(p *field.Path, spec map[string]any, key string, max int) ([]any, field.ErrorList) {
	list := getList(spec, key)
	if len(list) > max {
		return list[:max], field.ErrorList{field.TooMany(p, len(list), max)}
	}
	return list, nil
}

// validateInherit checks the parents' count and names. Whether they exist
// is the controller's to report: GitOps may apply them in any order.
func validateInherit(p *field.Path, spec map[string]any) field.ErrorList {
	list, errs := boundedList(p, spec, "inherit", maxInherit)
	for i, v := range list {
		if s, ok := v.(string); ok {
			errs = append(errs, checkPattern(p.Index(i), s, nameRE, "a Persona name: "+nameWhat)...)
		}
	}
	return errs
}

func validateLayerRefs(p *field.Path, spec map[string]any) field.ErrorList {
	list, errs := boundedList(p, spec, "layers", maxLayers)
	for i, v := range list {
		ref, ok := v.(map[string]any)
		if !ok {
			continue
		}
		np := p.Index(i).Child("name")
		switch name, state := getString(ref, "name"); {
		case state == absent || (state == present && name == ""):
			errs = append(errs, field.Required(np, "the name of a PromptLayer in the same namespace"))
		case state == present:
			errs = append(errs, validateSubdomain(np, name)...)
		}
	}
	return errs
}

// validatePlatform checks platform overrides (a Persona's systemPrompt.platform,
// a PromptPlatform's sections): keys from the catalog, and each entry setting
// exactly one of replace and remove (personas.md#platform-sections).
func validatePlatform(p *field.Path, platform map[string]any, budget *templateBudget) field.ErrorList {
	var errs, unknown listedErrors
	for _, key := range slices.Sorted(maps.Keys(platform)) {
		kp := KeyPath(p, key)
		if !render.IsPlatformKey(key) {
			unknown.add(func() *field.Error {
				return &field.Error{
					Type:     field.ErrorTypeNotSupported,
					Field:    kp.String(),
					BadValue: truncate(key),
					Detail:   "not a platform section; " + suggest.Hint(key, render.Catalog, "the sections are"),
				}
			})
		}
		entry, ok := platform[key].(map[string]any)
		if !ok {
			// null is pruned (unset); another type is a shape error.
			continue
		}
		replace, replaceState := getString(entry, "replace")
		remove, removeState := getBool(entry, "remove")
		switch {
		case replaceState == absent && removeState == absent:
			errs.add(func() *field.Error {
				return field.Required(kp, "set exactly one of replace (the section's template) and remove: true")
			})
		case replaceState != absent && removeState != absent:
			errs.add(func() *field.Error {
				return field.Forbidden(kp.Child("remove"), "may not be set together with replace; set exactly one of replace and remove")
			})
		}
		if removeState == present && !remove {
			errs.add(func() *field.Error {
				return field.Invalid(kp.Child("remove"), false, "remove: false is not allowed; leave the key unset to inherit the section")
			})
		}
		if replaceState == present && !errs.full() {
			// An empty replace is allowed: it renders the section to nothing.
			errs.addAll(checkTemplate(kp.Child("replace"), render.KindPlatform, key, replace, budget))
		}
	}
	return append(unknown.list(p), errs.list(p)...)
}

// validateExtensions checks systemPrompt.extensions (personas.md#extensions).
func validateExtensions(p *field.Path, sp map[string]any, budget *templateBudget) field.ErrorList {
	list := getList(sp, "extensions")
	// Extensions have no maximum: past MaxListedErrors, the errors of the
	// items are counted, not built.
	var errs listedErrors
	seen := map[string]bool{}
	for i, v := range list {
		ext, ok := v.(map[string]any)
		if !ok {
			continue
		}
		ip := p.Index(i)
		id, idState := getString(ext, "id")
		switch {
		case idState == absent || (idState == present && id == ""):
			errs.add(func() *field.Error {
				return field.Required(ip.Child("id"), "the extension's id, matching "+extensionIDPattern)
			})
		case idState == present:
			errs.addAll(checkPattern(ip.Child("id"), id, extensionIDRE, "a lower-case letter, then up to 62 lower-case letters, digits or '_'"))
			if seen[id] {
				errs.add(func() *field.Error { return field.Duplicate(ip.Child("id"), truncate(id)) })
			}
			seen[id] = true
		}
		switch tmpl, state := getString(ext, "template"); {
		case state == absent:
			errs.add(func() *field.Error { return field.Required(ip.Child("template"), "the extension's Go template") })
		case state == present && tmpl == "":
			errs.add(func() *field.Error { return field.Required(ip.Child("template"), "must not be empty") })
		case state == present && !errs.full():
			errs.addAll(checkTemplate(ip.Child("template"), render.KindExtension, id, tmpl, budget))
		}
	}
	return errs.list(p)
}

// validateVariants checks spec.variants (personas.md#delivery): names unique, since each
// is a key system-prompt.<name>.md of the ConfigMap.
func validateVariants(p *field.Path, spec map[string]any) field.ErrorList {
	list, errs := boundedList(p, spec, "variants", maxVariants)
	seen := map[string]bool{}
	for i, v := range list {
		variant, ok := v.(map[string]any)
		if !ok {
			continue
		}
		ip := p.Index(i)
		switch name, state := getString(variant, "name"); {
		case state == absent || (state == present && name == ""):
			errs = append(errs, field.Required(ip.Child("name"), "the variant's name"))
		case state == present:
			errs = append(errs, checkPattern(ip.Child("name"), name, nameRE, nameWhat)...)
			if seen[name] {
				errs = append(errs, field.Duplicate(ip.Child("name"), truncate(name)))
			}
			seen[name] = true
		}
		if h, state := getString(variant, "harness"); state == present {
			errs = append(errs, checkHarness(ip.Child("harness"), h)...)
		}
		errs = append(errs, checkHarnessPrompt(ip, variant)...)
		errs = append(errs, checkSettingLengths(ip, variant)...)
	}
	return errs
}

// checkSettingLengths refuses a model or reasoning effort of the persona's
// or a variant's (in m, at p) longer than its limit, so that these never
// crowd a guardrail out of the ConfigMap (personas.md#writing-a-persona-spec).
func checkSettingLengths(p *field.Path, m map[string]any) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		key string
		max int
	}{{"model", v1alpha1.MaxModelBytes}, {"reasoningEffort", v1alpha1.MaxReasoningEffortBytes}} {
		if v, state := getString(m, f.key); state == present && len(v) > f.max {
			errs = append(errs, field.TooLong(p.Child(f.key), nil, f.max))
		}
	}
	return errs
}

// validateHistoryLimit refuses a revisionHistoryLimit outside
// 0..v1alpha1.MaxRevisionHistoryLimit (its type is checkShape's).
func validateHistoryLimit(p *field.Path, spec map[string]any) field.ErrorList {
	v, ok := lookup(spec, "revisionHistoryLimit")
	if !ok {
		return nil
	}
	var n float64
	switch x := v.(type) {
	case float64:
		n = x
	case int64:
		n = float64(x)
	case int:
		n = float64(x)
	default:
		return nil
	}
	if n < 0 || n > v1alpha1.MaxRevisionHistoryLimit {
		return field.ErrorList{field.Invalid(p, v, fmt.Sprintf("must be between 0 and %d", v1alpha1.MaxRevisionHistoryLimit))}
	}
	return nil
}

// validatePin refuses a pin-revision annotation that is not a positive
// integer (personas.md#pinning); a CRD's CEL rules cannot read annotations.
func validatePin(obj map[string]any) field.ErrorList {
	md, _ := obj["metadata"].(map[string]any)
	annotations, _ := md["annotations"].(map[string]any)
	v, ok := annotations[v1alpha1.PinRevisionAnnotation]
	if !ok {
		return nil
	}
	p := field.NewPath("metadata", "annotations").Key(v1alpha1.PinRevisionAnnotation)
	text, isString := v.(string)
	if !isString {
		return field.ErrorList{field.Invalid(p, shortValue(v), "must be a positive integer, as a string")}
	}
	if _, _, err := v1alpha1.PinnedRevisionOf(map[string]string{v1alpha1.PinRevisionAnnotation: text}); err != nil {
		return field.ErrorList{field.Invalid(p, text, "must be a positive integer: the revision to deliver")}
	}
	return nil
}
