package webhook

import (
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// maxReportedErrors bounds the errors a refusal lists. The API server's
// error message joins them at a cost that grows with the square of their
// number, and an object of 60 KiB can hold thousands (one per unknown key):
// listed whole, they took seconds of CPU and an answer 26 times the
// request's size.
const maxReportedErrors = 100

// refusal is the answer that refuses an object of kind gk named name for
// errs, the first maxReportedErrors of them named and the rest counted.
func refusal(gk schema.GroupKind, name string, errs field.ErrorList) admission.Response {
	if more := len(errs) - maxReportedErrors; more > 0 {
		errs = append(errs[:maxReportedErrors:maxReportedErrors],
			field.Forbidden(field.NewPath("(the rest of the object)"), fmt.Sprintf("%d more errors, not listed", more)))
	}
	status := apierrors.NewInvalid(gk, name, errs).Status()
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
}
