package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
)

// The metadata cache keeps a Persona's own ConfigMap whole but for its
// managedFields, which an update writes back, and of any other ConfigMap
// only what the watches read.
func TestTrimConfigMapMetadata(t *testing.T) {
	controller := metav1.OwnerReference{APIVersion: "prompts.persona-operator.dev/v1alpha1", Kind: "Persona", Name: "p", UID: "u", Controller: new(true)}
	meta := func(name string, owners ...metav1.OwnerReference) *metav1.PartialObjectMetadata {
		m := kube.ConfigMapMetadata()
		m.ObjectMeta = metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: "cm", ResourceVersion: "7", OwnerReferences: owners,
			Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "b"}, Finalizers: []string{"f"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}},
		}
		return m
	}

	out, _ := trimConfigMapMetadata(meta("persona-p", controller))
	own := out.(*metav1.PartialObjectMetadata)
	if own.Labels["team"] != "a" || own.Annotations["note"] != "b" || len(own.Finalizers) != 1 || own.ResourceVersion != "7" || len(own.OwnerReferences) != 1 {
		t.Errorf("a Persona's ConfigMap lost metadata: %+v", own.ObjectMeta)
	}
	if own.ManagedFields != nil {
		t.Error("a Persona's ConfigMap kept its managedFields")
	}

	for name, m := range map[string]*metav1.PartialObjectMetadata{
		"no owner":                         meta("persona-p"),
		"another Persona's name":           meta("persona-q", controller),
		"a name outside the prefix":        meta("agents", controller),
		"an owner that is not controller":  meta("persona-p", metav1.OwnerReference{APIVersion: controller.APIVersion, Kind: "Persona", Name: "p", UID: "u"}),
		"a controller of another API kind": meta("persona-p", metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "p", UID: "u", Controller: new(true)}),
	} {
		out, _ := trimConfigMapMetadata(m)
		got := out.(*metav1.PartialObjectMetadata)
		if got.Labels != nil || got.Annotations != nil || got.Finalizers != nil || got.ManagedFields != nil {
			t.Errorf("%s: kept more than the watches read: %+v", name, got.ObjectMeta)
		}
		if got.Name != m.Name || got.ResourceVersion != "7" || got.UID != "cm" || len(got.OwnerReferences) != len(m.OwnerReferences) {
			t.Errorf("%s: lost what the watches read: %+v", name, got.ObjectMeta)
		}
	}
}

// A template source keeps its template-source label, and no other.
func TestTrimConfigMapMetadataKeepsTheSourceLabel(t *testing.T) {
	m := kube.ConfigMapMetadata()
	m.ObjectMeta = metav1.ObjectMeta{Name: "agents", Namespace: "ns", Labels: map[string]string{"team": "a", v1alpha1.TemplateSourceLabel: "true"}}
	out, _ := trimConfigMapMetadata(m)
	if got := out.(*metav1.PartialObjectMetadata).Labels; len(got) != 1 || got[v1alpha1.TemplateSourceLabel] != "true" {
		t.Errorf("labels %v, want only the template-source label", got)
	}
}
