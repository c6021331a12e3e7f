package webhook

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

// cachedFacts answers as the manager's caches would for one Persona at
// revision 4 with its four snapshots.
type cachedFacts struct{}

func (cachedFacts) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	p := obj.(*v1alpha1.Persona)
	*p = v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, UID: "u1"},
		Spec:   v1alpha1.PersonaSpec{Variants: []v1alpha1.Variant{{Name: "short"}}},
		Status: v1alpha1.PersonaStatus{CurrentRevision: 4}}
	return nil
}

func (cachedFacts) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	l := list.(*metav1.PartialObjectMetadataList)
	controller := true
	for n := int64(1); n <= 4; n++ {
		l.Items = append(l.Items, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Name: delivery.SnapshotName("reviewer", n), Namespace: "team-a", Labels: delivery.SnapshotLabels("reviewer", n),
			Annotations:     map[string]string{delivery.GuardrailsAnnotation: "sha256:g"},
			OwnerReferences: []metav1.OwnerReference{{UID: "u1", Controller: &controller}},
		}})
	}
	return nil
}

// The webhook's own time per pod create, from the admission request to the
// patch, with the caches' answers in memory:
//
//	go test ./internal/webhook -run XXX -bench BenchmarkInjectorHandle -benchmem
func BenchmarkInjectorHandle(b *testing.B) {
	i := &Injector{Personas: cachedFacts{}, ConfigMaps: cachedFacts{}}
	req := podCreate(b, "team-a", map[string]string{"prompts.persona-operator.dev/persona": "reviewer", "app": "agent"})
	ctx := context.Background()
	for b.Loop() {
		if resp := i.Handle(ctx, req); !resp.Allowed || len(resp.Patches) == 0 {
			b.Fatalf("%+v", resp)
		}
	}
}
