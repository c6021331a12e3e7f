package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
)

func TestTrimConfigMaps(t *testing.T) {
	data := map[string]string{"system-prompt.md": "A\n"}
	managed := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "persona-p", Labels: delivery.Labels("p"), ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
		Data:       map[string]string{"system-prompt.md": "A\n"},
	}
	out, _ := trimConfigMaps(managed)
	cm := out.(*corev1.ConfigMap)
	if cm.Data != nil || cm.ManagedFields != nil {
		t.Errorf("managed ConfigMap kept data or managedFields: %+v", cm)
	}
	if dataHash(cm) != render.ContentHash(data) {
		t.Errorf("hash %q, want the data's %q", dataHash(cm), render.ContentHash(data))
	}
	desired := delivery.ConfigMap("p", "", &render.Output{Data: data, Hash: render.ContentHash(data)})
	cm.Annotations[delivery.ContentHashAnnotation] = desired.Annotations[delivery.ContentHashAnnotation]
	if !isCurrent(cm, desired) {
		t.Error("a trimmed ConfigMap with the desired data is not current")
	}
	other := map[string]string{"system-prompt.md": "B\n"}
	if isCurrent(cm, delivery.ConfigMap("p", "", &render.Output{Data: other, Hash: render.ContentHash(other)})) {
		t.Error("a trimmed ConfigMap with other data is current")
	}

	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "agents"}, Data: map[string]string{"AGENTS.md": "x"}}
	out, _ = trimConfigMaps(foreign)
	if out.(*corev1.ConfigMap).Data["AGENTS.md"] != "x" {
		t.Error("a ConfigMap the operator does not write lost its data")
	}
}
