package persona

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

func TestReadLog(t *testing.T) {
	persona := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1", Generation: 2, ResourceVersion: "10"}}
	layer := func(name string, generation int64, rv string, labels map[string]string) *v1alpha1.PromptLayer {
		return &v1alpha1.PromptLayer{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Generation: generation, ResourceVersion: rv, Labels: labels}}
	}
	configMap := func(rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "agents", ResourceVersion: rv}}
	}
	layers := func(items ...*v1alpha1.PromptLayer) *v1alpha1.PromptLayerList {
		l := &v1alpha1.PromptLayerList{}
		for _, i := range items {
			l.Items = append(l.Items, *i)
		}
		return l
	}
	sum := func(p *v1alpha1.Persona, reads ...any) inputs {
		l := newReadLog(p)
		for _, r := range reads {
			switch r := r.(type) {
			case client.ObjectList:
				if err := l.ReadList(r); err != nil {
					t.Fatal(err)
				}
			case client.ObjectKey:
				l.Missing(&v1alpha1.PromptLayer{}, r)
			case client.Object:
				l.Read(r)
			}
		}
		return l.sum()
	}
	base := sum(persona, layer("a", 1, "20", nil), configMap("30"))

	same := map[string]inputs{
		"the same reads":                   sum(persona, layer("a", 1, "20", nil), configMap("30")),
		"a layer's status written":         sum(persona, layer("a", 1, "21", nil), configMap("30")),
		"the Persona's own status written": sum(&v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1", Generation: 2, ResourceVersion: "11"}}, layer("a", 1, "20", nil), configMap("30")),
	}
	for name, got := range same {
		if got != base {
			t.Errorf("%s: the inputs differ", name)
		}
	}
	different := map[string]inputs{
		"a layer's spec edited":           sum(persona, layer("a", 2, "22", nil), configMap("30")),
		"a layer relabelled":              sum(persona, layer("a", 1, "22", map[string]string{"tier": "gold"}), configMap("30")),
		"a ConfigMap written":             sum(persona, layer("a", 1, "20", nil), configMap("31")),
		"the Persona's spec edited":       sum(&v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1", Generation: 3}}, layer("a", 1, "20", nil), configMap("30")),
		"a Persona of the same name anew": sum(&v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u2", Generation: 2}}, layer("a", 1, "20", nil), configMap("30")),
		"another layer read":              sum(persona, layer("b", 1, "20", nil), configMap("30")),
		"the layer missing":               sum(persona, client.ObjectKey{Namespace: "ns", Name: "a"}, configMap("30")),
		"one read less":                   sum(persona, layer("a", 1, "20", nil)),
	}
	for name, got := range different {
		if got == base {
			t.Errorf("%s: the inputs are the same", name)
		}
	}

	// A list is read in the order of its keys, whatever the cache's order.
	a, b := layer("a", 1, "20", nil), layer("b", 1, "20", nil)
	if sum(persona, layers(a, b)) != sum(persona, layers(b, a)) {
		t.Error("the inputs of a list depend on its order")
	}
	if sum(persona, layers(a, b)) == sum(persona, layers(a)) {
		t.Error("the inputs of a list do not depend on its items")
	}
}
