package delivery

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

func TestOwnership(t *testing.T) {
	p := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-p"}}
	byP := metav1.OwnerReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.PersonaKind, Name: "p", UID: "uid-p", Controller: ptr.To(true)}
	olderP, otherKind, notController := byP, byP, byP
	olderP.UID = "uid-older"
	otherKind.APIVersion = "example.com/v1"
	notController.Controller = nil
	cm := func(name string, labels map[string]string, owners ...metav1.OwnerReference) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: labels, OwnerReferences: owners}
	}
	for _, tc := range []struct {
		what                                string
		obj                                 *metav1.ObjectMeta
		controls, live, snapshot, snapshot2 bool
	}{
		{"p's live ConfigMap", cm("persona-p", Labels("p"), byP), true, true, false, false},
		{"an older p's live ConfigMap", cm("persona-p", Labels("p"), olderP), false, true, false, false},
		{"another kind's reference of p's UID", cm("persona-p", Labels("p"), otherKind), false, false, false, false},
		{"an owner that is not the controller", cm("persona-p", Labels("p"), notController), false, false, false, false},
		{"another Persona's name", cm("persona-q", Labels("q"), byP), true, false, false, false},
		{"p's snapshot of revision 2", cm("persona-p.r2", SnapshotLabels("p", 2), byP), true, false, true, true},
		{"an older p's snapshot", cm("persona-p.r2", SnapshotLabels("p", 2), olderP), false, false, true, false},
		{"a snapshot's name without its labels", cm("persona-p.r2", Labels("p"), byP), true, false, false, false},
		{"a snapshot of revision 3", cm("persona-p.r3", SnapshotLabels("p", 3), byP), true, false, true, false},
	} {
		if got := Controls(p, tc.obj); got != tc.controls {
			t.Errorf("%s: Controls %v, want %v", tc.what, got, tc.controls)
		}
		if got := IsLiveConfigMap(tc.obj); got != tc.live {
			t.Errorf("%s: IsLiveConfigMap %v, want %v", tc.what, got, tc.live)
		}
		if got := IsSnapshot(tc.obj); got != tc.snapshot {
			t.Errorf("%s: IsSnapshot %v, want %v", tc.what, got, tc.snapshot)
		}
		if got := IsSnapshotOf(p, tc.obj, 2); got != tc.snapshot2 {
			t.Errorf("%s: IsSnapshotOf(p, 2) %v, want %v", tc.what, got, tc.snapshot2)
		}
	}
}

func TestPodRevision(t *testing.T) {
	for value, want := range map[string]int64{"1": 1, "12": 12, "0": 0, "02": 0, "-1": 0, "x": 0} {
		n, ok := PodRevision(map[string]string{RevisionLabel: value})
		if n != want || ok != (want > 0) {
			t.Errorf("%q: %d %v, want %d", value, n, ok, want)
		}
	}
	if _, ok := PodRevision(map[string]string{PersonaLabel: "p"}); ok {
		t.Error("a pod without the label names a revision")
	}
}
