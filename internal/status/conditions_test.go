package status

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// kstatusConditions are the conditions' statuses by type, "" for an absent one.
func kstatusConditions(conds []metav1.Condition) (ready, reconciling, stalled metav1.ConditionStatus) {
	get := func(t string) metav1.ConditionStatus {
		if c := meta.FindStatusCondition(conds, t); c != nil {
			return c.Status
		}
		return ""
	}
	return get(v1alpha1.ReadyCondition), get(v1alpha1.ReconcilingCondition), get(v1alpha1.StalledCondition)
}

func TestMarkFailed(t *testing.T) {
	const grace = 2 * time.Minute
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	missingA := Failure{Reason: v1alpha1.ReferenceNotFoundReason, Message: `PromptLayer "a" not found`}
	missingAB := Failure{Reason: v1alpha1.ReferenceNotFoundReason, Message: `PromptLayer "a" not found; PromptLayer "b" not found`}
	expect := func(t *testing.T, conds []metav1.Condition, reconciling, stalled metav1.ConditionStatus) {
		t.Helper()
		r, rec, st := kstatusConditions(conds)
		if r != metav1.ConditionFalse || rec != reconciling || st != stalled {
			t.Fatalf("Ready=%q Reconciling=%q Stalled=%q, want Ready=False Reconciling=%q Stalled=%q", r, rec, st, reconciling, stalled)
		}
	}

	t.Run("a missing reference is awaited for the grace period, then stalled", func(t *testing.T) {
		var conds []metav1.Condition
		if after := MarkFailed(&conds, 1, missingA, t0, grace); after != grace {
			t.Fatalf("reconcile again after %v, want %v", after, grace)
		}
		expect(t, conds, metav1.ConditionTrue, "")
		if after := MarkFailed(&conds, 1, missingA, t0.Add(90*time.Second), grace); after != 30*time.Second {
			t.Fatalf("reconcile again after %v, want 30s", after)
		}
		expect(t, conds, metav1.ConditionTrue, "")
		if after := MarkFailed(&conds, 1, missingA, t0.Add(grace), grace); after != 0 {
			t.Fatalf("a stalled object is not reconciled by itself, got %v", after)
		}
		expect(t, conds, "", metav1.ConditionTrue)
	})

	t.Run("the period restarts when the missing references change", func(t *testing.T) {
		var conds []metav1.Condition
		MarkFailed(&conds, 1, missingA, t0, grace)
		MarkFailed(&conds, 1, missingA, t0.Add(3*time.Minute), grace)
		expect(t, conds, "", metav1.ConditionTrue)
		if after := MarkFailed(&conds, 2, missingAB, t0.Add(4*time.Minute), grace); after != grace {
			t.Fatalf("reconcile again after %v, want %v", after, grace)
		}
		expect(t, conds, metav1.ConditionTrue, "")
		if got := meta.FindStatusCondition(conds, v1alpha1.ReadyCondition).LastTransitionTime.Time; !got.Equal(t0.Add(4 * time.Minute)) {
			t.Fatalf("Ready's lastTransitionTime is %v, want the change of the missing references", got)
		}
	})

	t.Run("the period counts from a Failure of another kind turning into a missing reference", func(t *testing.T) {
		var conds []metav1.Condition
		MarkFailed(&conds, 1, Failure{Reason: v1alpha1.InheritanceCycleReason, Message: "inheritance cycle: a -> b -> a"}, t0, grace)
		expect(t, conds, "", metav1.ConditionTrue)
		MarkFailed(&conds, 2, missingA, t0.Add(time.Hour), grace)
		expect(t, conds, metav1.ConditionTrue, "")
	})

	t.Run("a render that is retried is reconciling; other failures stall at once", func(t *testing.T) {
		var conds []metav1.Condition
		overrun := Failure{Reason: v1alpha1.RenderFailedReason, Message: "wall time", Retrying: true}
		if after := MarkFailed(&conds, 1, overrun, t0, grace); after != 0 {
			t.Fatalf("the retry's delay is the caller's, got %v", after)
		}
		expect(t, conds, metav1.ConditionTrue, "")
		overrun.Retrying = false
		MarkFailed(&conds, 1, overrun, t0, grace)
		expect(t, conds, "", metav1.ConditionTrue)
	})

	t.Run("ready clears both", func(t *testing.T) {
		var conds []metav1.Condition
		MarkFailed(&conds, 1, missingA, t0, grace)
		MarkReady(&conds, 2, v1alpha1.RenderedReason, "rendered")
		if r, rec, st := kstatusConditions(conds); r != metav1.ConditionTrue || rec != "" || st != "" {
			t.Fatalf("Ready=%q Reconciling=%q Stalled=%q, want Ready=True alone", r, rec, st)
		}
		if c := meta.FindStatusCondition(conds, v1alpha1.ReadyCondition); c.ObservedGeneration != 2 {
			t.Fatalf("Ready's observedGeneration is %d, want 2", c.ObservedGeneration)
		}
	})
}
