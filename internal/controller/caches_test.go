package controller

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// The metadata cache keeps a Persona's own ConfigMap whole but for its
// managedFields, which an update writes back, and of any other ConfigMap
// only what the watches read.
func TestTrimConfigMapMetadata(t *testing.T) {
	controller := metav1.OwnerReference{APIVersion: "prompts.persona-operator.dev/v1alpha1", Kind: "Persona", Name: "p", UID: "u", Controller: new(true)}
	meta := func(name string, owners ...metav1.OwnerReference) *metav1.PartialObjectMetadata {
		m := configMapMetadata()
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
	m := configMapMetadata()
	m.ObjectMeta = metav1.ObjectMeta{Name: "agents", Namespace: "ns", Labels: map[string]string{"team": "a", v1alpha1.TemplateSourceLabel: "true"}}
	out, _ := trimConfigMapMetadata(m)
	if got := out.(*metav1.PartialObjectMetadata).Labels; len(got) != 1 || got[v1alpha1.TemplateSourceLabel] != "true" {
		t.Errorf("labels %v, want only the template-source label", got)
	}
}

// configMapServer is the API server's ConfigMaps, for a sourceReader: its
// metadata cache and its live reader. It counts full reads.
type configMapServer struct {
	items     map[string]*corev1.ConfigMap
	fullReads int
}

func (s *configMapServer) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	cm, ok := s.items[key.Name]
	if !ok {
		return apierrors.NewNotFound(corev1.Resource("configmaps"), key.Name)
	}
	switch o := obj.(type) {
	case *metav1.PartialObjectMetadata:
		o.ObjectMeta = *cm.ObjectMeta.DeepCopy()
	case *corev1.ConfigMap:
		s.fullReads++
		cm.DeepCopyInto(o)
	}
	return nil
}

func (s *configMapServer) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return nil
}

// readKeyK reads the key "k" of the ConfigMap name in "ns" through s.
func readKeyK(t *testing.T, s *sourceReader, name string) *corev1.ConfigMap {
	t.Helper()
	var cm corev1.ConfigMap
	if err := s.get(context.Background(), types.NamespacedName{Namespace: "ns", Name: name}, &cm, "k", true); err != nil {
		t.Fatal(err)
	}
	return &cm
}
