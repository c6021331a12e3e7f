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
	out, _ := TrimConfigMaps(managed)
	cm := out.(*corev1.ConfigMap)
	if cm.Data != nil || cm.ManagedFields != nil {
		t.Errorf("managed ConfigMap kept data or managedFields: %+v", cm)
	}
	if dataHash(cm) != render.ContentHash(data) {
		t.Errorf("hash %q, want the data's %q", dataHash(cm), render.ContentHash(data))
	}
	desired := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Labels: delivery.Labels("p")}, Data: data}
	if !isCurrent(cm, desired, render.ContentHash(data)) {
		t.Error("a trimmed ConfigMap with the desired data is not current")
	}
	if isCurrent(cm, desired, render.ContentHash(map[string]string{"system-prompt.md": "B\n"})) {
		t.Error("a trimmed ConfigMap with other data is current")
	}

	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "agents"}, Data: map[string]string{"AGENTS.md": "x"}}
	out, _ = TrimConfigMaps(foreign)
	if out.(*corev1.ConfigMap).Data["AGENTS.md"] != "x" {
		t.Error("a ConfigMap the operator does not write lost its data")
	}
}
