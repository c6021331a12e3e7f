package kube

import (
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

// Two Personas decoded from the API server's JSON share the strings they
// repeat once the cache's transform has run, and read the same as before.
func TestInternObjectsSharesRepeatedStrings(t *testing.T) {
	withoutCollections(t)
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
	if &a.Status.Sections[0] != &b.Status.Sections[0] || &a.Status.Dependencies[0] != &b.Status.Dependencies[0] {
		t.Error("equal lists of sections or of dependencies are not one shared array")
	}
	if a.Name == b.Name {
		t.Error("names were merged")
	}
}

// A decoded history of 9 revisions has room for 16; the cache keeps 9.
func TestInternObjectsFitsTheStatusLists(t *testing.T) {
	var history []string
	for i := range 9 {
		history = append(history, fmt.Sprintf(`{"revision":%d,"contentHash":"sha256:%d","cause":{"kind":"Persona","name":"p"}}`, i+1, i+1))
	}
	var p v1alpha1.Persona
	if err := json.Unmarshal([]byte(`{"status":{"history":[`+strings.Join(history, ",")+`]}}`), &p); err != nil {
		t.Fatal(err)
	}
	if cap(p.Status.History) == len(p.Status.History) {
		t.Fatalf("decoding left no room past the history's %d revisions: nothing to test", len(p.Status.History))
	}
	want := p.DeepCopy()
	if _, err := InternObjects(&p); err != nil {
		t.Fatal(err)
	}
	if got := cap(p.Status.History); got != 9 {
		t.Errorf("the cached history of 9 revisions has room for %d", got)
	}
	if !equality.Semantic.DeepEqual(&p, want) {
		t.Errorf("the transform changed the history:\n got %+v\nwant %+v", p.Status.History, want.Status.History)
	}
}

// ConfigMaps rendered with the same guardrails share their identity.
func TestInternMetaSharesTheGuardrails(t *testing.T) {
	withoutCollections(t)
	meta := func(name string) *metav1.PartialObjectMetadata {
		var m metav1.PartialObjectMetadata
		raw := `{"metadata":{"name":"` + name + `","annotations":{"` + delivery.GuardrailsAnnotation + `":"sha256:guard","` +
			delivery.ContentHashAnnotation + `":"sha256:` + name + `"}}}`
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			t.Fatal(err)
		}
		InternMeta(&m)
		return &m
	}
	a, b := meta("a"), meta("b")
	x, y := a.Annotations[delivery.GuardrailsAnnotation], b.Annotations[delivery.GuardrailsAnnotation]
	if x != "sha256:guard" || unsafe.StringData(x) != unsafe.StringData(y) {
		t.Errorf("guardrails %q and %q are not one shared string", x, y)
	}
}

// withoutCollections stops the collector for the rest of the test: a
// canonical copy lasts only while a handle of it does (Intern), so the
// objects a test interns share their strings only within one collection.
func withoutCollections(t *testing.T) {
	t.Helper()
	percent := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(percent) })
}
