package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	personaadmission "github.com/persona-operator/persona-operator/internal/admission"
	"github.com/persona-operator/persona-operator/internal/render"
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

// personaReview is an AdmissionReview of a Persona create whose object is
// obj, as the API server sends it.
func personaReview(t *testing.T, uid string, obj []byte) []byte {
	t.Helper()
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: types.UID(uid), Name: "p", Namespace: "ns", Operation: admissionv1.Create,
			Kind:   metav1.GroupVersionKind{Group: "prompts.persona-operator.dev", Version: "v1alpha1", Kind: "Persona"},
			Object: runtime.RawExtension{Raw: obj}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// TestUnknownKeyFloodDoesNotDenyTheAPIServer: clients at three addresses,
// each keeping two reviews of 2.8 MiB objects of 250,000 unknown keys
// under way, beside the API server's reviews of 3 MiB Personas: each of
// the API server's is validated, none denied by the bound. (Every error
// built, such an object took a second of CPU, one at a time in the lane in
// arrival order, and 3 of 5 of the API server's were denied after 5 s.)
func TestUnknownKeyFloodDoesNotDenyTheAPIServer(t *testing.T) {
	srv := httptest.NewServer(newInflight(render.Default().Limits()).wrap(&webhook.Admission{Handler: &Validator{}}))
	defer srv.Close()
	var keys strings.Builder
	for i := range 250_000 {
		fmt.Fprintf(&keys, `,"k%d":1`, i)
	}
	flood := personaReview(t, "flood", []byte(`{"apiVersion":"prompts.persona-operator.dev/v1alpha1","kind":"Persona","metadata":{"name":"p","namespace":"ns"},"spec":{"model":"m"`+keys.String()+`}}`))
	persona, _ := json.Marshal(map[string]any{"apiVersion": "prompts.persona-operator.dev/v1alpha1", "kind": "Persona",
		"metadata": map[string]any{"name": "p", "namespace": "ns"}, "spec": map[string]any{"prompt": strings.Repeat("You review code. ", 3<<20/17)}})
	api := personaReview(t, "api", persona)
	t.Logf("the flood's reviews are %.1f MiB, the API server's %.1f MiB", float64(len(flood))/(1<<20), float64(len(api))/(1<<20))

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for a := range 3 {
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					postFrom(t, srv, fmt.Sprintf("127.0.4.%d", a+1), flood)
				}
			}()
		}
	}
	defer func() { close(stop); wg.Wait() }()
	time.Sleep(time.Second)
	var slowest time.Duration
	for i := range 7 {
		status, took := postFrom(t, srv, "127.0.0.1", api)
		slowest = max(slowest, took)
		if status != http.StatusOK || took >= maxWait {
			t.Errorf("the API server's review %d: %d after %v; want it validated, not denied by the bound", i, status, took)
		}
	}
	t.Logf("the API server's 7 reviews: the slowest took %v", slowest)
}
