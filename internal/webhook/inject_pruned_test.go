package webhook

import (
	"context"
	"encoding/json"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/test/fixtures"
)

// A pod whose template names revision 1 while the cache still holds its
// snapshot, pruned a moment ago, gets the current revision 2: a volume of a
// deleted ConfigMap would keep it from ever starting.
func TestInjectionSkipsASnapshotPrunedSinceTheCacheSawIt(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	p := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Name: "reviewer", Namespace: "team", UID: types.UID("u1")},
		Status: v1alpha1.PersonaStatus{CurrentRevision: 2}}
	snapshot := func(n int64) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: delivery.SnapshotName("reviewer", n), Namespace: "team",
			Labels:          delivery.SnapshotLabels("reviewer", n),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "prompts.persona-operator.dev/v1alpha1", Kind: "Persona", Name: "reviewer", UID: "u1", Controller: new(true)}}}}
	}
	cached := fake.NewClientBuilder().WithScheme(scheme).WithObjects(p, snapshot(1), snapshot(2)).Build()
	live := fake.NewClientBuilder().WithScheme(scheme).WithObjects(snapshot(2)).Build()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "team",
		Labels:      map[string]string{delivery.PersonaLabel: "reviewer"},
		Annotations: map[string]string{delivery.RevisionAnnotation: "1"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "agent"}}}}
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: "team",
		Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Object: runtime.RawExtension{Raw: raw}}}
	for _, c := range []struct {
		name      string
		snapshots client.Reader
		want      string
	}{
		{"trusting the cache", nil, delivery.SnapshotName("reviewer", 1)},
		{"asking the API server", live, delivery.SnapshotName("reviewer", 2)},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := (&Injector{Personas: cached, ConfigMaps: cached, Snapshots: fixtures.ListedSnapshots{Reader: cached}, APIReader: c.snapshots}).Handle(context.Background(), req)
			if !resp.Allowed {
				t.Fatalf("refused: %v", resp.Result)
			}
			var volume string
			for _, op := range resp.Patches {
				if op.Path == "/spec/volumes" {
					b, _ := json.Marshal(op.Value)
					var vs []corev1.Volume
					_ = json.Unmarshal(b, &vs)
					volume = vs[0].ConfigMap.Name
				}
			}
			if volume != c.want {
				t.Errorf("the pod mounts %q, want %q (patches %v)", volume, c.want, resp.Patches)
			}
		})
	}
}
