package webhook

import (
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	personaadmission "github.com/persona-operator/persona-operator/internal/admission"
)

// refusal is the answer that refuses an object of kind gk named name for
// errs, the first admission.MaxListedErrors of them named and the rest
// counted, as the API server words an Invalid error: the message joins
// them, and an object of 60 KiB can hold thousands (one per unknown key),
// which, listed whole, took seconds of CPU and an answer 26 times the
// request's size. The message is joined here in one pass: apimachinery's
// join grows with the square of the errors' length, 1.75 MiB of garbage
// for a hundred errors of a few hundred bytes.
func refusal(gk schema.GroupKind, name string, errs field.ErrorList) admission.Response {
	errs = personaadmission.Capped(field.NewPath("(the rest of the object)"), errs)
	status := apierrors.NewInvalid(gk, name, nil).Status()
	status.Details.Causes = make([]metav1.StatusCause, len(errs))
	for i, err := range errs {
		status.Details.Causes[i] = metav1.StatusCause{Type: metav1.CauseType(err.Type), Message: err.ErrorBody(), Field: err.Field}
	}
	status.Message += ": " + joinErrors(errs)
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
}

// joinErrors is errs as an aggregate error reads: each distinct message
// once, in order, comma-separated, and bracketed when there are several.
func joinErrors(errs field.ErrorList) string {
	var b strings.Builder
	seen := make(map[string]bool, len(errs))
	for _, err := range errs {
		msg := err.Error()
		if seen[msg] {
			continue
		}
		if len(seen) > 0 {
			b.WriteString(", ")
		}
		seen[msg] = true
		b.WriteString(msg)
	}
	if len(seen) == 1 {
		return b.String()
	}
	return "[" + b.String() + "]"
}
