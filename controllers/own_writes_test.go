package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
)

func TestOwnWrites(t *testing.T) {
	const uid = types.UID("persona-uid")
	owned := func(text string, owner types.UID) *corev1.ConfigMap {
		data := map[string]string{"system-prompt.md": text}
		cm := delivery.ConfigMap("p", "ns", &render.Output{Data: data, Hash: render.ContentHash(data)})
		cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "prompts.persona-operator.dev/v1alpha1", Kind: "Persona", Name: "p", UID: owner, Controller: new(true)}}
		return cm
	}
	// watched is the ConfigMap as the cache hands it to event handlers.
	watched := func(cm *corev1.ConfigMap) *corev1.ConfigMap {
		out, _ := trimConfigMaps(cm.DeepCopy())
		return out.(*corev1.ConfigMap)
	}

	w := newOwnWrites()
	written := owned("A\n", uid)
	if w.holds(watched(written)) {
		t.Error("holds a ConfigMap before anything was recorded")
	}
	w.record(written)
	if !w.holds(watched(written)) {
		t.Error("the event of the recorded write is not recognized")
	}
	if !w.holds(written) {
		t.Error("an untrimmed ConfigMap with the recorded data is not recognized")
	}

	cases := map[string]func(cm *corev1.ConfigMap){
		"data edited by hand": func(cm *corev1.ConfigMap) { cm.Data["system-prompt.md"] = "edited\n" },
		"key added":           func(cm *corev1.ConfigMap) { cm.Data["extra.md"] = "x" },
		"binary data added":   func(cm *corev1.ConfigMap) { cm.BinaryData = map[string][]byte{"b": {1}} },
		"label removed":       func(cm *corev1.ConfigMap) { delete(cm.Labels, delivery.ManagedByLabel) },
		"hash annotation set": func(cm *corev1.ConfigMap) { cm.Annotations[delivery.ContentHashAnnotation] = "sha256:0" },
		"owner removed":       func(cm *corev1.ConfigMap) { cm.OwnerReferences = nil },
		"other owner":         func(cm *corev1.ConfigMap) { cm.OwnerReferences[0].UID = "other" },
	}
	for name, change := range cases {
		cm := written.DeepCopy()
		change(cm)
		if w.holds(watched(cm)) {
			t.Errorf("%s: taken for the operator's own write", name)
		}
	}

	next := owned("B\n", uid)
	w.record(next)
	if w.holds(watched(written)) {
		t.Error("the previous write is still recognized after a new one was recorded")
	}
	if !w.holds(watched(next)) {
		t.Error("the new write is not recognized")
	}
	w.forget(client.ObjectKeyFromObject(next))
	if w.holds(watched(next)) {
		t.Error("recognized after forget")
	}
	if w.holds(&corev1.Secret{ObjectMeta: written.ObjectMeta}) {
		t.Error("holds an object that is not a ConfigMap")
	}
}
