package resolve

import (
	"fmt"
	"strings"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// Reference names an object a persona reads, for errors and dependencies.
type Reference struct {
	Kind string // Persona, PromptLayer or ConfigMap
	Name string
	// Key is the ConfigMap key, for a templateFrom reference.
	Key string
	// By is what refers to it.
	By Referrer
	// Unlabelled is set for a templateFrom ConfigMap that exists without
	// v1alpha1.TemplateSourceLabel: it is read as if it were missing.
	Unlabelled bool
}

// Referrer is what holds a reference: a persona (its inherit or layers), a
// layer (its templateFrom or include), an extension or a platform section
// (an include).
type Referrer struct {
	Kind ReferrerKind
	Name string
}

// ReferrerKind is the kind of a Referrer.
type ReferrerKind string

// The kinds of referrers.
const (
	ByPersona   ReferrerKind = "persona"
	ByLayer     ReferrerKind = "layer"
	ByExtension ReferrerKind = "extension"
	ByPlatform  ReferrerKind = "platform section"
)

func (r Referrer) String() string { return fmt.Sprintf("%s %q", r.Kind, r.Name) }

func (r Reference) String() string {
	s := fmt.Sprintf("%s %q", r.Kind, r.Name)
	if r.Key != "" {
		s = fmt.Sprintf("key %q of %s", r.Key, s)
	}
	if r.By.Kind != "" {
		s += " (referenced by " + r.By.String() + ")"
	}
	return s
}

// Problem says what is wrong with the reference: it is not found, or it is
// a ConfigMap that is not a template source. Admission, the controllers and
// the CLI report it in these words.
func (r Reference) Problem() string {
	if r.Unlabelled {
		return fmt.Sprintf("%s is not a template source: it lacks the label %s: \"true\"", r, v1alpha1.TemplateSourceLabel)
	}
	return r.String() + " not found"
}

// Pending says, for admission, that the reference is not there yet, which
// GitOps allows: it may be applied next. A templateFrom ConfigMap is
// looked up among the template sources, which are labelled, so one that
// is not there may exist without the label.
func (r Reference) Pending() string {
	s := fmt.Sprintf("%s %q does not exist yet", r.Kind, r.Name)
	if r.Kind == "ConfigMap" {
		s += fmt.Sprintf(" or lacks the label %s: \"true\"", v1alpha1.TemplateSourceLabel)
	}
	return s
}

// NotFoundError reports referenced objects that do not exist (personas.md#conditions
// ReferenceNotFound). It lists every missing reference found.
type NotFoundError struct {
	Missing []Reference
}

func (e *NotFoundError) Error() string {
	parts := make([]string, len(e.Missing))
	for i, r := range e.Missing {
		parts[i] = r.Problem()
	}
	return strings.Join(parts, "; ")
}

// CycleError reports an inheritance cycle (personas.md#conditions InheritanceCycle).
type CycleError struct {
	Chain []string
}

func (e *CycleError) Error() string {
	return "inheritance cycle: " + strings.Join(e.Chain, " -> ")
}

// TooDeepError reports an inheritance chain of more than MaxChain Personas
// (personas.md#conditions InheritanceTooDeep).
type TooDeepError struct {
	// Persona is the first persona past the limit, in the order of the walk.
	Persona string
}

func (e *TooDeepError) Error() string {
	return fmt.Sprintf("inheritance chain holds more than the limit of %d personas (persona %q is the %dth)", MaxChain, e.Persona, MaxChain+1)
}

// HarnessPromptForbiddenError reports harnessPrompt: replace, the persona's
// or a variant's, where the PromptPlatform forbids it
// (personas.md#conditions HarnessPromptForbidden).
type HarnessPromptForbiddenError struct {
	// Uses are the fields of the Persona that ask for replace.
	Uses []HarnessPromptUse
}

// HarnessPromptUse is a field of a Persona that asks for harnessPrompt: replace.
type HarnessPromptUse struct {
	// Field is spec.harnessPrompt or spec.variants[i].harnessPrompt.
	Field string
	// From is the Persona of the inheritance chain that sets it, when the
	// Persona inherits it.
	From string
}

func (e *HarnessPromptForbiddenError) Error() string {
	parts := make([]string, len(e.Uses))
	for i, u := range e.Uses {
		parts[i] = u.Field + ": " + u.Problem()
	}
	return strings.Join(parts, "; ")
}

// Problem says what is wrong with the field, for the field's own report.
func (u HarnessPromptUse) Problem() string {
	s := "replace"
	if u.From != "" {
		s += fmt.Sprintf(", inherited from persona %q,", u.From)
	}
	return fmt.Sprintf("%s is forbidden by %s %s (its spec.harnessPrompt.allowReplace is false); set keep, or leave it unset",
		s, v1alpha1.PromptPlatformKind, v1alpha1.PromptPlatformName)
}
