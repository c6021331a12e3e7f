package admission

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/suggest"
)

// Warning is something legal that is most likely a slip: the object is
// admitted, and the warning is shown to whoever applied it (kubectl prints
// the webhook's warnings; kubectl-persona validate prints them too).
type Warning struct {
	Field   string
	Message string
}

func (w Warning) String() string { return w.Field + ": " + w.Message }

// builtinSources are the layer sources with a fixed rank.
var builtinSources = []string{render.SourceUser, render.SourcePackage, render.SourceApp, render.SourceRun}

// PromptLiteralNote says that a persona's prompt is not a template.
const PromptLiteralNote = "a Persona's prompt is literal text, never executed as a template, so the braces are delivered as written; " +
	"to use template variables, put the text in a systemPrompt.extensions template"

// Warnings returns the warnings of an object of this API: a layer source
// that is a near miss of a built-in one (a custom source is legal, so it is
// only a warning), and template braces in a persona's prompt.
func Warnings(obj map[string]any) []Warning {
	kind, _ := obj["kind"].(string)
	spec, _ := obj["spec"].(map[string]any)
	var out []Warning
	switch kind {
	case v1alpha1.PromptLayerKind:
		if src, state := getString(spec, "source"); state == present {
			if w, ok := sourceWarning(src); ok {
				out = append(out, Warning{Field: field.NewPath("spec", "source").String(), Message: w})
			}
		}
	case v1alpha1.PersonaKind:
		if prompt, state := getString(spec, "prompt"); state == present && strings.Contains(prompt, "{{") {
			out = append(out, Warning{Field: field.NewPath("spec", "prompt").String(), Message: "contains {{; " + PromptLiteralNote})
		}
	}
	return out
}

// sourceWarning is the warning for a custom source that is one or two edits
// from a built-in source name.
func sourceWarning(src string) (string, bool) {
	for _, b := range builtinSources {
		if src == b {
			return "", false
		}
	}
	s := suggest.Closest(src, builtinSources)
	if s == "" {
		return "", false
	}
	return fmt.Sprintf("%q is not a built-in source, so it ranks as a custom source, between package and app; did you mean %q?", truncate(src), s), true
}
