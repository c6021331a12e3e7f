package kube_test

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/test/fixtures"
)

// LiveMetadata finds a namespaced object and a cluster-scoped one by name,
// through a reader that refuses a get of this API's kinds as the manager's
// RBAC does, and tells one that is not there as a get would.
func TestLiveMetadataListsByName(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{
		&v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p", UID: "uid-a-p", Generation: 3}},
		&v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "p", UID: "uid-b-p"}},
		&v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "q", UID: "uid-a-q"}},
		&v1alpha1.ClusterPromptLayer{ObjectMeta: metav1.ObjectMeta{Name: "g", UID: "uid-g"}},
	}
	live := fixtures.ManagersAPIServer{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithIndex(&v1alpha1.Persona{}, "metadata.name", fixtures.IndexName).
		WithIndex(&v1alpha1.ClusterPromptLayer{}, "metadata.name", fixtures.IndexName).Build()}
	for _, c := range []struct {
		kind string
		key  client.ObjectKey
		want types.UID
	}{
		{v1alpha1.PersonaKind, client.ObjectKey{Namespace: "a", Name: "p"}, "uid-a-p"},
		{v1alpha1.PersonaKind, client.ObjectKey{Namespace: "b", Name: "p"}, "uid-b-p"},
		{v1alpha1.ClusterPromptLayerKind, client.ObjectKey{Name: "g"}, "uid-g"},
	} {
		m, err := kube.LiveMetadata(t.Context(), live, v1alpha1.GroupVersion.WithKind(c.kind), c.key)
		if err != nil || m.UID != c.want {
			t.Errorf("%s %s: %v, %v; want UID %s", c.kind, c.key, m, err, c.want)
		}
	}
	_, err := kube.LiveMetadata(t.Context(), live, v1alpha1.GroupVersion.WithKind(v1alpha1.PersonaKind), client.ObjectKey{Namespace: "b", Name: "q"})
	if status, ok := err.(apierrors.APIStatus); !apierrors.IsNotFound(err) || !ok || status.Status().Details.Kind != "personas" {
		t.Errorf("a Persona not there: %v, want NotFound of personas", err)
	}
}
