package persona

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// The restarts decide a Persona's RolloutHalted; the Persona controller's
// status carries it at the Persona's generation, keeps it through its own
// condition changes, and a decision made twice brings the Persona back once.
func TestRolloutHaltsAreWrittenWithTheStatus(t *testing.T) {
	h := NewRolloutHalts()
	key := types.NamespacedName{Namespace: "team", Name: "agent"}
	p := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "agent", Generation: 3}}
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.RenderedReason})

	h.apply(p)
	if meta.FindStatusCondition(p.Status.Conditions, v1alpha1.RolloutHaltedCondition) != nil {
		t.Fatal("RolloutHalted set with nothing decided")
	}

	h.Set(key, metav1.ConditionTrue, v1alpha1.RolloutFailedReason, "the rollout of Deployment team/a failed")
	h.Set(key, metav1.ConditionTrue, v1alpha1.RolloutFailedReason, "the rollout of Deployment team/a failed")
	if n := len(h.events); n != 1 {
		t.Errorf("%d events for one decision made twice, want 1", n)
	}
	h.apply(p)
	c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.RolloutHaltedCondition)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.RolloutFailedReason || c.ObservedGeneration != 3 {
		t.Fatalf("RolloutHalted %+v, want True RolloutFailed at generation 3", c)
	}
	if !meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ReadyCondition) {
		t.Error("Ready changed")
	}

	h.Set(key, metav1.ConditionFalse, v1alpha1.RolloutsResumedReason, "resumed")
	h.apply(p)
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.RolloutHaltedCondition); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("RolloutHalted %+v after the resume, want False", c)
	}

	h.forgetPersona(key)
	q := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "agent"}}
	h.apply(q)
	if len(q.Status.Conditions) != 0 {
		t.Errorf("a Persona of the same name, re-created, got %v", q.Status.Conditions)
	}
}
