package webhook

import (
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	personaadmission "github.com/persona-operator/persona-operator/internal/admission"
)

// refusal is the answer that refuses an object of kind gk named name for
// errs, the first admission.MaxListedErrors of them named and the rest
// counted: the API server's error message joins them at a cost that grows
// with the square of their number, and an object of 60 KiB can hold
// thousands (one per unknown key), which, listed whole, took seconds of CPU
// and an answer 26 times the request's size.
func refusal(gk schema.GroupKind, name string, errs field.ErrorList) admission.Response {
	errs = personaadmission.Capped(field.NewPath("(the rest of the object)"), errs)
	status := apierrors.NewInvalid(gk, name, errs).Status()
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
}
