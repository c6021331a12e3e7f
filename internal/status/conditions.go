// Package status sets the status every kind of this API reports
// (personas.md#conditions): kstatus-compatible conditions, the reference
// grace period, and a rendered Persona's fields.
package status

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// DefaultReferenceGracePeriod is how long a missing reference is awaited
// before the object is stalled (personas.md#conditions).
const DefaultReferenceGracePeriod = 2 * time.Minute

// Failure is why an object is not Ready.
type Failure struct {
	// Reason is the Ready reason; Message says what failed.
	Reason, Message string
	// Retrying is set when the controller tries again by itself.
	Retrying bool
}

// MarkReady sets Ready=True for generation and clears Reconciling and Stalled.
func MarkReady(conds *[]metav1.Condition, generation int64, reason, message string) {
	setCondition(conds, metav1.Condition{
		Type: v1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: reason, Message: message, ObservedGeneration: generation,
	})
	meta.RemoveStatusCondition(conds, v1alpha1.ReconcilingCondition)
	meta.RemoveStatusCondition(conds, v1alpha1.StalledCondition)
}

// MarkFailed sets Ready=False for generation with exactly one of
// Reconciling and Stalled (personas.md#conditions). A missing reference is awaited for
// grace, counted from Ready's lastTransitionTime, which restarts whenever
// the missing references (the message names them) change; the clock lives
// in the status, so it survives a restart or a change of leader. awaitFor
// is how long until the object must be reconciled again to become Stalled;
// 0 when it needs no such visit.
func MarkFailed(conds *[]metav1.Condition, generation int64, f Failure, now time.Time, grace time.Duration) (awaitFor time.Duration) {
	f.Message = Cut(f.Message, MaxConditionMessage)
	ready := metav1.Condition{
		Type: v1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: f.Reason, Message: f.Message, ObservedGeneration: generation,
	}
	if prev := meta.FindStatusCondition(*conds, v1alpha1.ReadyCondition); prev != nil && prev.Status == metav1.ConditionFalse &&
		(prev.Reason != f.Reason || prev.Message != f.Message) {
		// SetStatusCondition keeps the time while the status stays False.
		meta.RemoveStatusCondition(conds, v1alpha1.ReadyCondition)
	}
	ready.LastTransitionTime = metav1.NewTime(now)
	setCondition(conds, ready)
	inProgress := f.Retrying
	if f.Reason == v1alpha1.ReferenceNotFoundReason {
		since := meta.FindStatusCondition(*conds, v1alpha1.ReadyCondition).LastTransitionTime.Time
		if left := since.Add(grace).Sub(now); left > 0 {
			inProgress, awaitFor = true, left
		}
	}
	set, clear := v1alpha1.StalledCondition, v1alpha1.ReconcilingCondition
	if inProgress {
		set, clear = v1alpha1.ReconcilingCondition, v1alpha1.StalledCondition
	}
	setCondition(conds, metav1.Condition{
		Type: set, Status: metav1.ConditionTrue, Reason: f.Reason, Message: f.Message, ObservedGeneration: generation,
	})
	meta.RemoveStatusCondition(conds, clear)
	return awaitFor
}

// setCondition sets c, its message cut to MaxConditionMessage.
func setCondition(conds *[]metav1.Condition, c metav1.Condition) {
	c.Message = Cut(c.Message, MaxConditionMessage)
	meta.SetStatusCondition(conds, c)
}
