package revisions

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// Pruning and eviction keep, beyond revisionHistoryLimit, the snapshots
// that pods of the Persona name; a pod of another Persona, or one on the
// live ConfigMap, keeps nothing.
func TestPruneKeepsTheSnapshotsPodsName(t *testing.T) {
	limit := int32(1)
	p := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Name: "reviewer", Namespace: "team-a", UID: "u1"},
		Spec: v1alpha1.PersonaSpec{RevisionHistoryLimit: &limit}, Status: v1alpha1.PersonaStatus{CurrentRevision: 5}}
	objs := []client.Object{p,
		agentPod("old", onRevision("2")),
		agentPod("other", map[string]string{"prompts.persona-operator.dev/persona": "writer", "prompts.persona-operator.dev/revision": "3"}),
		agentPod("live", map[string]string{"prompts.persona-operator.dev/persona": "reviewer"}),
	}
	for n := int64(1); n <= 5; n++ {
		objs = append(objs, snapshotObject(p, n, true))
	}
	s := newStore(t, objs...)
	// The keeper of the injected pods (here reading the fake cluster as
	// the cache): what the byte cap's eviction asks too.
	s.keepers = append(s.keepers, NamedByPods(s.cluster))
	kept, err := s.keptRevisions(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if !kept[2] || kept[3] {
		t.Errorf("kept revisions %v: want 2 (a pod of reviewer names it), not 3 (a pod of writer does)", kept)
	}
	// Pruning without the keeper: its fresh list of the pods keeps 2 alone.
	fresh := make([]client.Object, len(objs))
	for i, o := range objs {
		fresh[i] = o.DeepCopyObject().(client.Object)
		fresh[i].SetResourceVersion("")
	}
	s = newStore(t, fresh...)
	if err := s.prune(context.Background(), p, nil); err != nil {
		t.Fatal(err)
	}
	// Kept: 5 (current), 2 (a pod names it), 4 (the limit of 1 older one).
	var left corev1.ConfigMapList
	if err := s.cluster.List(context.Background(), &left, client.InNamespace("team-a")); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, cm := range left.Items {
		names = append(names, cm.Name)
	}
	if want := []string{"persona-reviewer.r2", "persona-reviewer.r4", "persona-reviewer.r5"}; !reflect.DeepEqual(names, want) {
		t.Errorf("snapshots left %v, want %v", names, want)
	}
}

func agentPod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", Labels: labels}}
}

func onRevision(n string) map[string]string {
	return map[string]string{"prompts.persona-operator.dev/persona": "reviewer", "prompts.persona-operator.dev/revision": n}
}

// The revision the pin annotation names is kept before the status names it
// pinned (the reconcile that honours it is still to come).
func TestKeptRevisionsHoldThePinAnnotation(t *testing.T) {
	p := barePersona("p")
	p.Status.CurrentRevision, p.Status.LatestRevision = 5, 6
	p.Annotations = map[string]string{v1alpha1.PinRevisionAnnotation: "2"}
	s := newStore(t, p)
	kept, err := s.keptRevisions(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int64{2, 5, 6} {
		if !kept[n] {
			t.Errorf("revision %d not kept; kept %v", n, kept)
		}
	}
	if len(kept) != 3 {
		t.Errorf("kept %v, want 2, 5 and 6", kept)
	}
}
