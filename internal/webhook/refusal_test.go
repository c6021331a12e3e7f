package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	personaadmission "github.com/persona-operator/persona-operator/internal/admission"
)

// An object of thousands of unknown keys is refused in milliseconds, with
// the first 100 errors named and the rest counted: listed whole, the API
// server's error message cost seconds of CPU (it grows with the square of
// the errors) and an answer many times the request's size.
func TestRefusalOfManyErrorsIsBounded(t *testing.T) {
	var keys strings.Builder
	const unknown = 6000
	for i := range unknown {
		fmt.Fprintf(&keys, `,"k%d":1`, i)
	}
	obj := `{"apiVersion":"prompts.persona-operator.dev/v1alpha1","kind":"Persona","metadata":{"name":"p","namespace":"ns"},"spec":{}` + keys.String() + `}`
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "u", Name: "p", Namespace: "ns", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(obj)},
	}}
	req.Kind.Kind = "Persona"
	start := time.Now()
	resp := (&Validator{}).Handle(context.Background(), req)
	took := time.Since(start)
	if resp.Allowed || resp.Result == nil || resp.Result.Details == nil {
		t.Fatalf("an object of %d unknown keys was not refused: %+v", unknown, resp.Result)
	}
	causes := resp.Result.Details.Causes
	if len(causes) != personaadmission.MaxListedErrors+1 {
		t.Errorf("the refusal has %d causes, want %d named and one that counts the rest", len(causes), personaadmission.MaxListedErrors)
	}
	// 6000 unknown keys and the rest of the errors the object has: at
	// least 5900 are left out.
	last := causes[len(causes)-1].Message
	var more int
	if _, err := fmt.Sscanf(last[strings.Index(last, "Forbidden: ")+len("Forbidden: "):], "%d more errors", &more); err != nil || more < unknown-personaadmission.MaxListedErrors {
		t.Errorf("the last cause %q does not count the %d or more errors left out (%v)", last, unknown-personaadmission.MaxListedErrors, err)
	}
	answer, _ := json.Marshal(resp)
	if took > time.Second || len(answer) > 64<<10 {
		t.Errorf("refusing %d bytes took %v and answered %d bytes; want under 1 s and 64 KiB", len(obj), took, len(answer))
	}
	t.Logf("an object of %d bytes refused in %v with an answer of %d bytes", len(obj), took, len(answer))
}

// TestRefusalReadsAsTheAPIServersInvalidError: joined in one pass, the
// refusal is word for word the Invalid error apimachinery makes of the
// same errors, a repeated one said once.
func TestRefusalReadsAsTheAPIServersInvalidError(t *testing.T) {
	gk := schema.GroupKind{Group: "prompts.persona-operator.dev", Kind: "Persona"}
	p := field.NewPath("spec")
	for _, errs := range []field.ErrorList{
		{field.Required(p.Child("prompt"), "a prompt")},
		{field.Required(p.Child("prompt"), "a prompt"), field.Invalid(p.Child("model"), "x", "too short"), field.Required(p.Child("prompt"), "a prompt")},
	} {
		want := apierrors.NewInvalid(gk, "p", errs).Status()
		got := refusal(gk, "p", errs).Result
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("refusal:\n%+v\nwant the API server's:\n%+v", *got, want)
		}
	}
}
