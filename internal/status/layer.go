package status

import (
	"context"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/resolve"
)

// LayerProblem is what keeps a PromptLayer from being Ready
// (promptlayers.md#conditions).
type LayerProblem struct {
	Failure
	// Missing is the templateFrom ConfigMap or key that is not found, or the
	// ConfigMap that is no template source (ReferenceNotFound); nil for a
	// template that fails the template checks (TemplateInvalid).
	Missing *resolve.Reference
}

// CheckLayer checks what the PromptLayer controller and kubectl-persona
// check before a PromptLayer is Ready: its templateFrom ConfigMap and key
// exist and the ConfigMap is a template source, and its template passes the
// template checks. A disable layer without a template passes. It returns
// the problem, nil when there is none; err is a failure to read.
func CheckLayer(ctx context.Context, lookup resolve.Lookup, l *v1alpha1.PromptLayer) (*LayerProblem, error) {
	var text string
	switch {
	case l.Spec.Template != nil:
		text = *l.Spec.Template
	case l.Spec.TemplateFrom != nil:
		from, missing, err := resolve.TemplateFrom(ctx, lookup, l.Namespace, l)
		switch {
		case err != nil:
			return nil, err
		case missing != nil:
			return &LayerProblem{Failure: Failure{Reason: v1alpha1.ReferenceNotFoundReason, Message: missing.Problem()}, Missing: missing}, nil
		}
		text = from
	}
	if err := render.Default().Check(render.KindLayer, l.Name, text); err != nil {
		return &LayerProblem{Failure: Failure{Reason: v1alpha1.TemplateInvalidReason, Message: err.Error()}}, nil
	}
	return nil, nil
}
