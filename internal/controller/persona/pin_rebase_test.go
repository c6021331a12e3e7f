package persona

import (
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

// editGuard changes the guardrail's template and reconciles p twice (its
// delivery, then its status pass).
func editGuard(t *testing.T, s *steps, p *v1alpha1.Persona, template string) {
	t.Helper()
	guard := &v1alpha1.ClusterPromptLayer{}
	if err := s.cluster.Get(t.Context(), client.ObjectKey{Name: "guard"}, guard); err != nil {
		t.Fatal(err)
	}
	guard.Spec.Template, guard.Generation = template, guard.Generation+1
	if err := s.cluster.Update(t.Context(), guard); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := s.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)}); err != nil {
			t.Fatal(err)
		}
	}
	s.get(t, p)
}

// pinnedPass is one pass of p's pin with no render budget left: the latest
// render took it all.
func pinnedPass(t *testing.T, s *steps, p *v1alpha1.Persona) (pin, bool) {
	t.Helper()
	s.get(t, p)
	attempt, err := s.tryRender(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	attempt.budgetEnd = time.Now().Add(-time.Second)
	pn := pinOf(p)
	_, done, err := s.reconcilePinned(t.Context(), p, p.Status.DeepCopy(), &pn, attempt)
	if err != nil {
		t.Fatal(err)
	}
	return pn, done
}

// A pinned revision re-rendered with the current guardrails is rendered
// once: while the live ConfigMap holds that re-render, later passes deliver
// it as it is, whatever budget is left. A re-render to come is charged to
// what the latest render left of the budget, and is tried again.
func TestPinnedRebaseRendersOnceWithinTheBudget(t *testing.T) {
	s, p, req := guardedSteps(t)
	editText(t, s, p, req, "Two")
	pinTo(t, s, p, req, "1")
	editGuard(t, s, p, "Guard 2.")
	// Revision 3 is the latest render with the new guardrail, 4 revision 1's re-render.
	if p.Status.PinnedRevision != 1 || p.Status.LatestRevision != 3 || p.Status.CurrentRevision != 4 {
		t.Fatalf("pinned %d, latest %d, current %d; want 1, 3, and revision 1 re-rendered as 4", p.Status.PinnedRevision, p.Status.LatestRevision, p.Status.CurrentRevision)
	}
	if pn, done := pinnedPass(t, s, p); !done || pn.failure != "" || p.Status.CurrentRevision != 4 {
		t.Errorf("a pass over the delivered re-render: done %v, failure %s %s, current %d; want it delivered as it is, revision 4",
			done, pn.failure, pn.message, p.Status.CurrentRevision)
	}
	if got := configMapOf(t, s, p).Annotations[delivery.RevisionAnnotation]; got != "4" {
		t.Errorf("ConfigMap persona-p at revision %s, want 4", got)
	}

	// Another guardrail change: a re-render, with no budget left.
	guard := &v1alpha1.ClusterPromptLayer{}
	if err := s.cluster.Get(t.Context(), client.ObjectKey{Name: "guard"}, guard); err != nil {
		t.Fatal(err)
	}
	guard.Spec.Template, guard.Generation = "Guard 3.", guard.Generation+1
	if err := s.cluster.Update(t.Context(), guard); err != nil {
		t.Fatal(err)
	}
	pn, done := pinnedPass(t, s, p)
	if done || pn.failure == "" || pn.retryAfter == 0 {
		t.Errorf("a re-render past the budget: done %v, failure %q, retry after %s; want it not honoured, out of time, tried again", done, pn.failure, pn.retryAfter)
	}
}
