package persona

import (
	"encoding/json"
	"maps"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
)

// guardedSteps is a Persona p ("Hello") under a guardrail "Guard.",
// reconciled once: revision 1 is delivered and snapshotted.
func guardedSteps(t *testing.T) (*steps, *v1alpha1.Persona, ctrl.Request) {
	t.Helper()
	p := barePersona("p", "Hello")
	guard := &v1alpha1.ClusterPromptLayer{ObjectMeta: clusterLayerMeta("guard"),
		Spec: v1alpha1.ClusterPromptLayerSpec{Position: v1alpha1.ClusterLayerLast, Template: "Guard."}}
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"kubernetes.io/metadata.name": ns}}}
	s := newSteps(t, p, guard, nsObj)
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)}
	if _, err := s.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	s.get(t, p)
	return s, p, req
}

// forgedSnapshot is what a tenant who may write ConfigMaps but not the
// operator's could make where the ConfigMap policy is not installed: a
// ConfigMap of p's snapshot name n whose controller is p, with the
// guardrails annotation of p's live ConfigMap and a self-consistent content
// hash, holding a prompt without the guardrail.
func forgedSnapshot(t *testing.T, s *steps, p *v1alpha1.Persona, n int64, labels map[string]string) *corev1.ConfigMap {
	t.Helper()
	live := configMapOf(t, s, p)
	data := map[string]string{render.SystemPromptKey: "No guardrail here.\n"}
	hash := render.ContentHash(data)
	data[render.RevisionKey] = `{"revision":` + strconv.FormatInt(n, 10) + `,"contentHash":"` + hash + `"}`
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: delivery.SnapshotName(p.Name, n), Labels: labels,
		Annotations:     map[string]string{delivery.GuardrailsAnnotation: live.Annotations[delivery.GuardrailsAnnotation], delivery.ContentHashAnnotation: hash},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Persona", Name: p.Name, UID: p.UID, Controller: ptr.To(true)}}},
		Data: data}
}

// editText changes p's text, a new generation, and reconciles.
func editText(t *testing.T, s *steps, p *v1alpha1.Persona, req ctrl.Request, text string) {
	t.Helper()
	s.get(t, p)
	p.Spec.SystemPrompt.Extensions[0].Template = text
	p.Generation++
	if err := s.cluster.Update(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	// A second pass is the status pass of a delivery that was no edit of p's.
	for range 2 {
		if _, err := s.Reconcile(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	s.get(t, p)
}

// pinTo sets p's pin to n and reconciles.
func pinTo(t *testing.T, s *steps, p *v1alpha1.Persona, req ctrl.Request, n string) {
	t.Helper()
	s.get(t, p)
	p.Annotations = map[string]string{v1alpha1.PinRevisionAnnotation: n}
	if err := s.cluster.Update(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	// A second pass is the status pass of a delivery that was no edit of p's.
	for range 2 {
		if _, err := s.Reconcile(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	s.get(t, p)
}

// A ConfigMap of a snapshot's name that p controls is not p's snapshot
// unless it carries a snapshot's labels and holds what the operator wrote:
// a pin of it delivers the latest render, with the guardrail, and says
// Pinned=False RevisionNotFound.
func TestForgedSnapshotIsNotPinned(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		forge  func(cm *corev1.ConfigMap)
	}{
		{name: "unlabelled"},
		{name: "labelled for another revision", labels: delivery.SnapshotLabels("p", 98)},
		{name: "labelled, its data not of its content hash", labels: delivery.SnapshotLabels("p", 99),
			forge: func(cm *corev1.ConfigMap) { cm.Data[render.SystemPromptKey] = "Edited after.\n" }},
		{name: "labelled, its revision.json of another revision", labels: delivery.SnapshotLabels("p", 99),
			forge: func(cm *corev1.ConfigMap) {
				cm.Data[render.RevisionKey] = strings.Replace(cm.Data[render.RevisionKey], `"revision":99`, `"revision":7`, 1)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, p, req := guardedSteps(t)
			want := configMapOf(t, s, p).Data[render.SystemPromptKey]
			if !strings.Contains(want, "Guard.") {
				t.Fatalf("revision 1 delivers %q, without the guardrail", want)
			}
			forged := forgedSnapshot(t, s, p, 99, tc.labels)
			if tc.forge != nil {
				tc.forge(forged)
			}
			if err := s.cluster.Create(t.Context(), forged); err != nil {
				t.Fatal(err)
			}
			pinTo(t, s, p, req, "99")
			if got := configMapOf(t, s, p).Data[render.SystemPromptKey]; got != want {
				t.Errorf("ConfigMap persona-p delivers %q, want the latest render %q", got, want)
			}
			c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.PinnedCondition)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.RevisionNotFoundReason {
				t.Errorf("Pinned condition %+v, want False RevisionNotFound", c)
			}
			if p.Status.PinnedRevision != 0 || p.Status.CurrentRevision != 1 {
				t.Errorf("pinnedRevision %d, currentRevision %d; want none pinned, revision 1 delivered", p.Status.PinnedRevision, p.Status.CurrentRevision)
			}
		})
	}
}

// A genuine snapshot tampered with where no policy guards it (its data no
// longer of the content hash status.history names) is not delivered either.
func TestTamperedSnapshotIsNotPinned(t *testing.T) {
	s, p, req := guardedSteps(t)
	editText(t, s, p, req, "Second")
	snap := &corev1.ConfigMap{}
	if err := s.cluster.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: delivery.SnapshotName("p", 1)}, snap); err != nil {
		t.Fatal(err)
	}
	// Data, annotation and revision.json agree with each other, not with the status.
	data := withoutRevisionKey(snap.Data)
	data[render.SystemPromptKey] = "No guardrail here.\n"
	hash := render.ContentHash(data)
	rec, _ := decodeRecord(snap.Data[render.RevisionKey])
	rec.ContentHash = hash
	tampered := maps.Clone(data)
	raw, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	tampered[render.RevisionKey] = string(raw)
	if err := s.cluster.Delete(t.Context(), snap); err != nil {
		t.Fatal(err)
	}
	snap.ResourceVersion, snap.Data = "", tampered
	snap.Annotations[delivery.ContentHashAnnotation] = hash
	if err := s.cluster.Create(t.Context(), snap); err != nil {
		t.Fatal(err)
	}
	pinTo(t, s, p, req, "1")
	if got := configMapOf(t, s, p).Data[render.SystemPromptKey]; strings.Contains(got, "No guardrail") {
		t.Errorf("ConfigMap persona-p delivers the tampered %q", got)
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.PinnedCondition); c == nil || c.Reason != v1alpha1.RevisionNotFoundReason {
		t.Errorf("Pinned condition %+v, want False RevisionNotFound", c)
	}
}

// A ConfigMap squatting the name of the next revision's snapshot, p its
// controller but without a snapshot's labels, is not taken for that
// snapshot: SnapshotFailed SnapshotNameTaken, and a pin of that revision
// never delivers it.
func TestSquattedSnapshotNameIsTaken(t *testing.T) {
	s, p, req := guardedSteps(t)
	if err := s.cluster.Create(t.Context(), forgedSnapshot(t, s, p, 2, nil)); err != nil {
		t.Fatal(err)
	}
	s.get(t, p)
	editText(t, s, p, req, "Second")
	s.get(t, p)
	if p.Status.CurrentRevision != 2 {
		t.Fatalf("currentRevision %d, want 2", p.Status.CurrentRevision)
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.SnapshotFailedCondition); c == nil || c.Reason != v1alpha1.SnapshotNameTakenReason {
		t.Errorf("SnapshotFailed %+v, want SnapshotNameTaken", c)
	}
	pinTo(t, s, p, req, "1")
	pinTo(t, s, p, req, "2")
	// Revision 2 is delivered from what the operator rendered, never from the squatter.
	if got := configMapOf(t, s, p).Data[render.SystemPromptKey]; !strings.Contains(got, "Second") || !strings.Contains(got, "Guard.") {
		t.Errorf("ConfigMap persona-p delivers %q, want revision 2 as rendered, with the guardrail", got)
	}
}
