package controller

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// A foreign persona-<name> that lacks the operator's label is in neither
// ConfigMap watch, so its deletion brings no event: a Persona in
// ConfigMapConflict looks again by itself, soon at first, then less often,
// so that many long conflicts cost few reads.
const (
	minConflictRecheck = time.Second
	maxConflictRecheck = 5 * time.Minute
)

// conflictRecheck is when a Persona in ConfigMapConflict since its Ready
// condition's lastTransitionTime looks again: a quarter of the time it has
// been in conflict, within [minConflictRecheck, maxConflictRecheck].
func conflictRecheck(conds []metav1.Condition, now time.Time) time.Duration {
	var since time.Duration
	if ready := meta.FindStatusCondition(conds, v1alpha1.ReadyCondition); ready != nil {
		since = now.Sub(ready.LastTransitionTime.Time)
	}
	return min(max(since/4, minConflictRecheck), maxConflictRecheck)
}
