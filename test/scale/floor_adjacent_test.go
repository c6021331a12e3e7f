package main

import (
	"maps"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
)

// The floors beside the fan-outs write what the operator's ConfigMaps hold,
// guardrail and revision.json included, but nothing the manager's watches
// of ConfigMaps select or its owner references lead back to: the manager
// stays idle while they run.
func TestAdjacentConfigMapsAreNoneOfTheManagers(t *testing.T) {
	w, err := newWorld(adjacentNamespace(1), 1, 2, true, created)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range w.personas {
		cm := adjacentConfigMap(p, w.renders[i])
		if cm.Name != delivery.ConfigMapName(p.Name) || cm.Namespace != adjacentNamespace(1) {
			t.Errorf("persona %d: ConfigMap %s/%s, want %s/%s", i, cm.Namespace, cm.Name, adjacentNamespace(1), delivery.ConfigMapName(p.Name))
		}
		if !maps.Equal(cm.Data, w.renders[i].configMap.Data) {
			t.Errorf("persona %d: the data is not the operator's render", i)
		}
		if !strings.Contains(cm.Data[render.SystemPromptKey], "Platform guardrail, revision 1") {
			t.Errorf("persona %d: the system prompt lacks the round's guardrail:\n%s", i, cm.Data[render.SystemPromptKey])
		}
		if cm.Annotations[delivery.ContentHashAnnotation] != w.renders[i].configMap.Annotations[delivery.ContentHashAnnotation] || cm.Annotations[delivery.RevisionAnnotation] != "1" {
			t.Errorf("persona %d: annotations %v lack the render's hash or revision 1", i, cm.Annotations)
		}
		if len(cm.OwnerReferences) != 0 {
			t.Errorf("persona %d: owner references %v", i, cm.OwnerReferences)
		}
		for name, sel := range map[string]labels.Selector{"the operator's ConfigMaps": kube.NotSnapshotSelector, "the snapshots": kube.SnapshotSelector} {
			if sel.Matches(labels.Set(cm.Labels)) {
				t.Errorf("persona %d: labels %v are selected by the watch of %s", i, cm.Labels, name)
			}
		}
	}
}

// A floor beside the fan-outs is its median pass, with that pass's own
// middle for the interpolation, whatever order the passes came in.
func TestAdjacentFloorIsTheMedianPass(t *testing.T) {
	at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	passes := []timed{
		{took: 3 * time.Second, mid: at},
		{took: time.Second, mid: at.Add(5 * time.Second)},
		{took: 2 * time.Second, mid: at.Add(8 * time.Second)},
	}
	if got, want := medianPass(passes), passes[2]; got != want {
		t.Errorf("median pass %v at %v, want %v at %v", got.took, got.mid, want.took, want.mid)
	}
	if got, want := passesText(passes), "3s, 1s, 2s"; got != want {
		t.Errorf("passes %q, want %q", got, want)
	}
}
