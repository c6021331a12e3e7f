package admission

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
)

var clusterLayerPositions = []v1alpha1.ClusterLayerPosition{v1alpha1.ClusterLayerFirst, v1alpha1.ClusterLayerLast, v1alpha1.ClusterLayerFinal}

var clusterPromptLayerSpecType = reflect.TypeFor[v1alpha1.ClusterPromptLayerSpec]()

// ValidateClusterPromptLayer validates a ClusterPromptLayer object against
// clusterpromptlayers.md#writing-a-clusterpromptlayer-spec: the rules of a
// PromptLayer's name and template, no include, and valid selectors. It
// returns every problem found.
func ValidateClusterPromptLayer(obj map[string]any) field.ErrorList {
	name, errs := validateEnvelope(obj, validateSubdomain)
	specPath := field.NewPath("spec")
	errs = append(errs, checkShape(specPath, obj["spec"], clusterPromptLayerSpecType)...)
	spec, state := getMap(obj, "spec")
	if state == wrongType {
		return errs
	}
	// A missing spec is an empty one: it still needs a template.

	if d, state := getString(spec, "description"); state == present && len(d) > maxDescriptionBytes {
		errs = append(errs, field.TooLong(specPath.Child("description"), nil, maxDescriptionBytes))
	}
	if pos, state := getString(spec, "position"); state == present && !slices.Contains(clusterLayerPositions, v1alpha1.ClusterLayerPosition(pos)) {
		errs = append(errs, field.NotSupported(specPath.Child("position"), truncate(pos), clusterLayerPositions))
	}
	tp := specPath.Child("template")
	switch tmpl, state := getString(spec, "template"); state {
	case absent:
		errs = append(errs, field.Required(tp, "the guardrail's Go template"))
	case present:
		// An empty template is allowed: it adds nothing.
		includes, tmplErrs := inspectTemplate(tp, render.KindClusterLayer, name, tmpl)
		errs = append(errs, tmplErrs...)
		errs = append(errs, checkNoInclude(tp, includes)...)
	}
	for _, key := range []string{"namespaceSelector", "personaSelector"} {
		errs = append(errs, validateSelector(specPath.Child(key), spec[key])...)
	}
	return errs
}

// checkNoInclude refuses include calls: the PromptLayers they name differ per
// namespace, and a guardrail is the same text everywhere. A non-literal
// include does not parse, and checkTemplate reports it.
func checkNoInclude(p *field.Path, names []string) field.ErrorList {
	if len(names) == 0 {
		return nil
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(truncate(n))
	}
	return field.ErrorList{field.Forbidden(p, "include is not allowed in a ClusterPromptLayer (it includes "+
		strings.Join(quoted, ", ")+"): PromptLayers differ per namespace; put the text in the template")}
}

// A guardrail's selector is bounded as lists of the API are: past these,
// it is refused for its length and the rest is not checked, so that a
// selector's errors, each of which apimachinery builds with its long
// message, cost a bounded share of a review.
const (
	maxSelectorLabels      = 64
	maxSelectorExpressions = 32
	// maxSelectorValues bounds the values of all of a selector's
	// expressions together.
	maxSelectorValues = 256
)

// validateSelector checks a label selector as the API server checks its own:
// operators, values and label syntax. A value of the wrong shape is
// checkShape's to report, and skipped here. matchLabels are checked one key
// at a time, in order, so that each error names its key; a selector keeps
// at most MaxListedErrors of its errors.
func validateSelector(p *field.Path, v any) field.ErrorList {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	var errs listedErrors
	// The selector apimachinery checks is built of the values of the right
	// types, its lists cut to their bounds: any other value is the shape
	// walk's to report, and the rest is refused for its length, unchecked.
	lp := p.Child("matchLabels")
	if labels, ok := m["matchLabels"].(map[string]any); ok {
		keys := slices.Sorted(maps.Keys(labels))
		if len(keys) > maxSelectorLabels {
			errs.add(func() *field.Error { return field.TooMany(lp, len(keys), maxSelectorLabels) })
			keys = keys[:maxSelectorLabels]
		}
		for _, k := range keys {
			if v, ok := labels[k].(string); ok {
				errs.addAll(metav1validation.ValidateLabels(map[string]string{k: v}, KeyPath(lp, k)))
			}
		}
	}
	ep := p.Child("matchExpressions")
	if expressions, ok := m["matchExpressions"].([]any); ok {
		if len(expressions) > maxSelectorExpressions {
			errs.add(func() *field.Error { return field.TooMany(ep, len(expressions), maxSelectorExpressions) })
			expressions = expressions[:maxSelectorExpressions]
		}
		left := maxSelectorValues
		for i, e := range expressions {
			expr, ok := e.(map[string]any)
			if !ok {
				continue
			}
			values, _ := expr["values"].([]any)
			if len(values) > left {
				errs.add(func() *field.Error {
					return field.Forbidden(ep.Index(i).Child("values"), fmt.Sprintf(
						"a selector's expressions may have at most %d values in all; these and the rest are not checked", maxSelectorValues))
				})
				if left == 0 {
					break
				}
				values = values[:left]
			}
			left -= len(values)
			key, _ := expr["key"].(string)
			operator, _ := expr["operator"].(string)
			req := metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOperator(operator)}
			for _, v := range values {
				if s, ok := v.(string); ok {
					req.Values = append(req.Values, s)
				}
			}
			errs.addAll(metav1validation.ValidateLabelSelectorRequirement(req, metav1validation.LabelSelectorValidationOptions{}, ep.Index(i)))
		}
	}
	return errs.list(p)
}
