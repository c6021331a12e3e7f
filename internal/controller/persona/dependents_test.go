package persona

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/render"
)

func objectKey(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

func bundleWith(template string) *render.Bundle {
	return &render.Bundle{Extensions: []render.Extension{{ID: "x", Template: template}}}
}

func scheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func persona(name string, spec v1alpha1.PersonaSpec) *v1alpha1.Persona {
	return &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: spec}
}

func layer(name string, spec v1alpha1.PromptLayerSpec) *v1alpha1.PromptLayer {
	return &v1alpha1.PromptLayer{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: spec}
}

// TestDependents checks that the specs alone lead to every Persona that
// reads an object, however many hops away, with no status written yet.
func TestDependents(t *testing.T) {
	objs := []client.Object{
		// child inherits parent, parent lists layer listed, whose template
		// includes fragment; fragment reads ConfigMap agents.
		persona("child", v1alpha1.PersonaSpec{Inherit: []v1alpha1.PersonaName{"parent"}}),
		persona("grandchild", v1alpha1.PersonaSpec{Inherit: []v1alpha1.PersonaName{"child"}}),
		persona("parent", v1alpha1.PersonaSpec{Layers: []v1alpha1.LayerReference{{Name: "listed"}}}),
		layer("listed", v1alpha1.PromptLayerSpec{Template: new(`{{ include "fragment" . }}`)}),
		layer("fragment", v1alpha1.PromptLayerSpec{TemplateFrom: &v1alpha1.TemplateSource{
			ConfigMapKeyRef: v1alpha1.ConfigMapKeyReference{Name: "agents", Key: "AGENTS.md"},
		}}),
		// includer reads fragment through an extension of its own.
		persona("includer", v1alpha1.PersonaSpec{SystemPrompt: &v1alpha1.SystemPromptSpec{
			Extensions: []v1alpha1.Extension{{ID: "x", Template: `{{ include "fragment" . }}`}},
		}}),
		// bystander reads something else, and its status names what it read.
		persona("bystander", v1alpha1.PersonaSpec{Layers: []v1alpha1.LayerReference{{Name: "other"}}}),
		// reader's status records that its last render read fragment.
		&v1alpha1.Persona{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "reader"},
			Status:     v1alpha1.PersonaStatus{Dependencies: []v1alpha1.Dependency{{Kind: v1alpha1.PromptLayerKind, Name: "fragment"}}},
		},
	}
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(objs...).
		WithIndex(&v1alpha1.Persona{}, kube.DependencyIndex, kube.IndexDependencies).
		WithIndex(&v1alpha1.Persona{}, kube.ReferenceIndex, kube.IndexPersonaReferences).
		WithIndex(&v1alpha1.PromptLayer{}, kube.ReferenceIndex, kube.IndexLayerReferences).
		Build()
	waiting := newAwaiting()
	waiting.set(objectKey("ns", "waiter"), []objectRef{{Kind: v1alpha1.ConfigMapKind, Namespace: "ns", Name: "agents"}})

	for _, tc := range []struct {
		ref  objectRef
		want []string
	}{
		{objectRef{v1alpha1.ConfigMapKind, "ns", "agents"}, []string{"child", "grandchild", "includer", "parent", "reader", "waiter"}},
		{objectRef{v1alpha1.PromptLayerKind, "ns", "fragment"}, []string{"child", "grandchild", "includer", "parent", "reader"}},
		{objectRef{v1alpha1.PromptLayerKind, "ns", "listed"}, []string{"child", "grandchild", "parent"}},
		{objectRef{v1alpha1.PersonaKind, "ns", "parent"}, []string{"child", "grandchild"}},
		{objectRef{v1alpha1.PersonaKind, "ns", "grandchild"}, nil},
		{objectRef{v1alpha1.ConfigMapKind, "other-ns", "agents"}, nil},
	} {
		var got []string
		for _, req := range dependents(context.Background(), c, waiting, tc.ref) {
			if req.Namespace != tc.ref.Namespace {
				t.Errorf("%v: %v is in another namespace", tc.ref, req)
			}
			got = append(got, req.Name)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("dependents of %v = %v, want %v", tc.ref, got, tc.want)
		}
	}
}
