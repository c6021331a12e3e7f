package status

import (
	"errors"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/resolve"
)

// The Ready reasons of personas.md#conditions for what a Persona's resolve
// and render fail with. The controller and kubectl-persona both classify by
// these, so that a failure has the same reason in status and offline.

// ResolveReason is the Ready reason of an error resolve.Resolve returned:
// ReferenceNotFound, InheritanceCycle, InheritanceTooDeep or
// HarnessPromptForbidden. ok is false for
// any other error, a failure to read, which is no problem of the spec.
func ResolveReason(err error) (reason string, ok bool) {
	var notFound *resolve.NotFoundError
	var cycle *resolve.CycleError
	var tooDeep *resolve.TooDeepError
	var forbidden *resolve.HarnessPromptForbiddenError
	switch {
	case errors.As(err, &notFound):
		return v1alpha1.ReferenceNotFoundReason, true
	case errors.As(err, &cycle):
		return v1alpha1.InheritanceCycleReason, true
	case errors.As(err, &tooDeep):
		return v1alpha1.InheritanceTooDeepReason, true
	case errors.As(err, &forbidden):
		return v1alpha1.HarnessPromptForbiddenReason, true
	}
	return "", false
}

// RenderReason is the Ready reason of an error a render returned: TooLarge
// for ConfigMap data over the limit, RenderFailed for any other (a render
// reads nothing, so every error of one is a problem of the spec).
func RenderReason(err error) string {
	var tooLarge *render.TooLargeError
	if errors.As(err, &tooLarge) {
		return v1alpha1.TooLargeReason
	}
	return v1alpha1.RenderFailedReason
}

// OutOfTime reports whether a render failed for running out of wall time,
// its own or the persona's: the one RenderFailed the controller retries by
// itself, since an overloaded machine can cause it.
func OutOfTime(err error) bool {
	var limit *render.LimitError
	return errors.As(err, &limit) && (limit.Limit == render.LimitTime || limit.Limit == render.LimitPersonaTime)
}
