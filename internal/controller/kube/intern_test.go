package kube

import (
	"encoding/json"
	"fmt"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// Two Personas decoded from the API server's JSON share the strings they
// repeat once the cache's transform has run, and read the same as before.
func TestInternObjectsSharesRepeatedStrings(t *testing.T) {
	const raw = `{"metadata":{"name":"%s","namespace":"team-a","labels":{"team":"a"},
		"managedFields":[{"manager":"kubectl","operation":"Apply"}]},
		"spec":{"inherit":["base"],"layers":[{"name":"team-notes"}]},
		"status":{"conditions":[{"type":"Ready","status":"True","reason":"Rendered","message":"m","lastTransitionTime":"2026-01-01T00:00:00Z"}],
		"sections":[{"name":"platform.identity","origin":"default","bytes":10}],
		"dependencies":[{"kind":"PromptLayer","name":"team-notes"}],
		"contentHash":"sha256:%[1]s","history":[{"revision":1,"contentHash":"sha256:%[1]s","time":"2026-01-01T00:00:00Z",
		"cause":{"kind":"PromptLayer","namespace":"team-a","name":"team-notes","generation":2}}]}}`
	decode := func(name string) *v1alpha1.Persona {
		var p v1alpha1.Persona
		if err := json.Unmarshal([]byte(fmt.Sprintf(raw, name)), &p); err != nil {
			t.Fatal(err)
		}
		return &p
	}
	a, b := decode("a"), decode("b")
	wantA := a.DeepCopy()
	wantA.ManagedFields = nil
	for _, p := range []*v1alpha1.Persona{a, b} {
		if _, err := InternObjects(p); err != nil {
			t.Fatal(err)
		}
	}
	if !equality.Semantic.DeepEqual(a, wantA) {
		t.Errorf("the transform changed what the Persona says:\n got %+v\nwant %+v", a, wantA)
	}
	same := func(what, x, y string) {
		t.Helper()
		if x != y || unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s: %q and %q are not one shared string", what, x, y)
		}
	}
	same("namespace", a.Namespace, b.Namespace)
	same("label value", a.Labels["team"], b.Labels["team"])
	same("parent", string(a.Spec.Inherit[0]), string(b.Spec.Inherit[0]))
	same("layer", a.Spec.Layers[0].Name, b.Spec.Layers[0].Name)
	same("section", a.Status.Sections[0].Name, b.Status.Sections[0].Name)
	same("origin", a.Status.Sections[0].Origin, b.Status.Sections[0].Origin)
	same("dependency", a.Status.Dependencies[0].Name, b.Status.Dependencies[0].Name)
	same("reason", a.Status.Conditions[0].Reason, b.Status.Conditions[0].Reason)
	same("revision's cause", a.Status.History[0].Cause.Name, b.Status.History[0].Cause.Name)
	same("revision's cause kind", a.Status.History[0].Cause.Kind, b.Status.History[0].Cause.Kind)
	same("the current revision's hash and the status's", a.Status.History[0].ContentHash, a.Status.ContentHash)
	if a.Name == b.Name {
		t.Error("names were merged")
	}
}
