package kube

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The pods' metadata reader against the real API server lists the pods of
// the namespace and labels asked for, in one namespace or in all, and
// refuses a list of another kind.
func TestPodMetadataReaderLists(t *testing.T) {
	plane := emptyPlane(t)
	ctx := t.Context()
	c := plane.Client
	for _, ns := range []string{"one", "two"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		// No controller makes the default service account here.
		if err := c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []struct{ ns, name, persona string }{
		{"one", "a-1", "a"}, {"one", "a-2", "a"}, {"one", "b-1", "b"}, {"two", "a-3", "a"},
	} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: p.ns, Labels: map[string]string{"persona": p.persona}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "agent"}}},
		}
		if err := c.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	httpClient, err := rest.HTTPClientFor(plane.Config)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewPodMetadataReader(plane.Config, httpClient)
	if err != nil {
		t.Fatal(err)
	}
	names := func(opts ...client.ListOption) []string {
		t.Helper()
		list := PodMetadataList()
		if err := r.List(ctx, list, opts...); err != nil {
			t.Fatal(err)
		}
		if gvk := list.GroupVersionKind(); gvk != PodMetadataList().GroupVersionKind() {
			t.Errorf("the list became a %s", gvk)
		}
		var out []string
		for _, m := range list.Items {
			out = append(out, m.Namespace+"/"+m.Name)
		}
		slices.Sort(out)
		return out
	}
	if got, want := names(client.InNamespace("one"), client.MatchingLabels{"persona": "a"}), []string{"one/a-1", "one/a-2"}; !slices.Equal(got, want) {
		t.Errorf("the pods of persona a in one: %v, want %v", got, want)
	}
	if got, want := names(client.MatchingLabels{"persona": "a"}), []string{"one/a-1", "one/a-2", "two/a-3"}; !slices.Equal(got, want) {
		t.Errorf("the pods of persona a: %v, want %v", got, want)
	}
	if err := r.List(ctx, &corev1.PodList{}); err == nil {
		t.Error("a list of typed pods was accepted")
	}
	configMaps := &metav1.PartialObjectMetadataList{}
	configMaps.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	if err := r.List(ctx, configMaps); err == nil {
		t.Error("a list of ConfigMaps' metadata was accepted")
	}
}
